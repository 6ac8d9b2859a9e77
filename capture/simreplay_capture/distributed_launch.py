"""`torchrun` for this package's harness and tests: `python3 -m simreplay_capture.distributed_launch ARGS`.

Same arguments as `torchrun` (torch.distributed.run). It exists for one bug: torch 1.13's launcher
(Debian 12) cannot start any worker on Python >= 3.11, because `Std.from_str("0")` iterates an IntFlag
looking for the zero member, which Python 3.11 no longer yields, and the default `--redirects 0`
becomes None ("'NoneType' object has no attribute 'get'"). The fix maps the value with `Std(int(v))`.
Launchers of fixed torch versions are left as they are.
"""
from __future__ import annotations

import re
import sys


def _patch_std() -> None:
    try:
        from torch.distributed.elastic.multiprocessing import api
    except ImportError:
        return
    std = api.Std
    if std.from_str("0") is not None:  # fixed upstream
        return

    def from_str(vm: str):  # same contract as the original
        if re.match(api._VALUE_REGEX, vm):
            return std(int(vm))
        if re.match(api._MAPPING_REGEX, vm):
            return {int(i): std(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError(f"{vm} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")
    std.from_str = classmethod(lambda cls, vm: from_str(vm))


def main() -> None:
    _patch_std()
    from torch.distributed import run
    run.main(sys.argv[1:])


if __name__ == "__main__":
    main()
