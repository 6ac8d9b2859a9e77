// Output faults (issue 13, "Faults, and nothing lost"): a full disk and an unwritable directory while
// simulate, what-if, calibrate and validate write their results. Each must fail with a clear error
// and a non-zero exit, and leave no partial or corrupt file where a result is expected: every output
// present is whole (byte-identical to a fault-free run) and no temporary is left behind.
//
// The full disk is real where the test runs as root (a tmpfs of a few KiB, CI) and an injected write
// failure everywhere (RLIMIT_FSIZE with SIGXFSZ ignored: writes past the limit fail with EFBIG, as
// they would on a full disk). The unwritable directory is a read-only bind mount as root (root ignores
// permission bits) and a 0555 directory otherwise.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "tests/cli/sweep_test_util.h"
#include "tests/cli_runner.h"

namespace simreplay::testing {
namespace {

const std::string kSource = SIMREPLAY_SOURCE_DIR;
const std::string kQuickstartTrace = kSource + "/examples/quickstart/trace.jsonl.gz";

bool IsRoot() { return ::geteuid() == 0; }

// Runs the binary with writes limited to `max_file_bytes` per file.
CliOutcome RunCliWithFileSizeLimit(const std::vector<std::string>& args, rlim_t max_file_bytes) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // stays ignored across exec: write() then fails with EFBIG
    rlimit limit{max_file_bytes, max_file_bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::vector<char*> argv = {const_cast<char*>(SIMREPLAY_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(SIMREPLAY_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  return {WaitCli(pid), out};
}

// A directory mounted for the test's lifetime (root only).
class ScopedMount {
 public:
  ScopedMount(const fs::path& dir, const std::string& mount_args) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = std::system(("mount " + mount_args + " " + dir.string() + " 2>/dev/null").c_str()) == 0;
  }
  ~ScopedMount() {
    if (mounted_) std::system(("umount " + dir_.string()).c_str());
  }
  bool mounted() const { return mounted_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

// Every file under `dir`: no temporary, and each one that a fault-free run also wrote is identical to it.
// validate's documents carry run times and load averages, so there each JSON file must parse instead;
// its runs/ directory holds what the (fake) bench command wrote, which is not simreplay's output.
void ExpectNothingPartial(const fs::path& dir, const fs::path& reference, const std::string& context,
                          bool byte_stable = true) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << context << ": temporary left: " << e.path();
    const fs::path relative = fs::relative(e.path(), dir);
    const fs::path twin = reference / relative;
    if (!byte_stable) {
      if (*relative.begin() == "runs" || e.path().extension() != ".json") continue;
      EXPECT_FALSE(nlohmann::json::parse(Slurp(e.path()), nullptr, false).is_discarded())
          << context << ": partial or corrupt " << e.path();
    } else if (fs::exists(twin)) {
      EXPECT_EQ(Slurp(e.path()), Slurp(twin)) << context << ": partial or corrupt " << e.path();
    } else {
      ADD_FAILURE() << context << ": unexpected file " << e.path();
    }
  }
}

struct Verb {
  std::string name;
  std::vector<std::string> args;  // "OUT" is replaced by the output directory (or file)
  std::string out_leaf;           // appended to the directory: "" for a directory, "/model.json" for a file
  bool byte_stable = true;        // a fault-free run writes the same bytes every time
};

std::vector<std::string> WithOut(const Verb& v, const std::string& out) {
  std::vector<std::string> args;
  for (const auto& a : v.args) args.push_back(a == "OUT" ? out + v.out_leaf : a);
  return args;
}

// An A/B validation whose "bench" is a shell command copying the quickstart trace and writing a fixed
// summary (run.command, docs/validation-format.md): validate's whole path (runs, runs.json, two
// calibrations in child processes, predictions, validation.json, report.md) in about a second.
fs::path FakeBenchSpec(const fs::path& dir) {
  const std::string summary = R"({"throughput_samples_per_s": 150, "data_wait_s": {"mean": 0.02, "p95": 0.1}, )"
                              R"("gpu_idle_fraction": 0.5, "time_to_first_batch_s": 0.2})";
  nlohmann::json spec = {
      {"schema", "simreplay.experiment/1"},
      {"name", "fault test: fake bench"},
      {"mode", "ab"},
      {"run",
       {{"steps", 40},
        {"warmup_steps", 5},
        {"timeout_s", 120},
        {"command", {"/bin/sh", "-c", "cp " + kQuickstartTrace + " {trace} && echo '" + summary + "' > {summary}"}}}},
      {"repetitions", 1},
      {"warmup_runs", 0},
      {"pipeline_only_runs", false},
      {"base", {{"num_workers", 2}, {"batch_size", 8}, {"prefetch_factor", 2}, {"format", "files"}}},
      {"cases", {{{"name", "A"}}, {{"name", "B"}, {"set", {{"num_workers", 1}}}}}}};
  fs::create_directories(dir);
  std::ofstream(dir / "spec.json") << spec.dump(1) << "\n";
  return dir / "spec.json";
}

std::vector<Verb> WritingVerbs(const fs::path& scenario) {
  const fs::path spec = FakeBenchSpec(scenario.parent_path());
  return {{"simulate", {"simulate", scenario.string(), "--out", "OUT"}, ""},
          {"what-if", {"what-if", scenario.string(), "--out", "OUT", "--jobs", "2"}, ""},
          {"calibrate", {"calibrate", kQuickstartTrace, "--out", "OUT", "--no-self-check"}, "/model.json"},
          {"validate", {"validate", spec.string(), "--out", "OUT", "--no-host-screen"}, "", false}};
}

// Reference outputs of a fault-free run of each verb.
fs::path References(const fs::path& root, const std::vector<Verb>& verbs) {
  fs::path ref = root / "reference";
  for (const auto& v : verbs) {
    fs::create_directories(ref / v.name);
    auto r = RunCli([&] {
      std::string cmd;
      for (const auto& a : WithOut(v, (ref / v.name).string())) cmd += " " + a;
      return cmd;
    }());
    EXPECT_EQ(r.exit_code, 0) << v.name << ": " << r.output;
  }
  return ref;
}

TEST(Faults, InjectedWriteFailuresLeaveNoPartialFile) {
  fs::path root = FreshDir("faults_fsize");
  const fs::path scenario = QuickstartScenario(root / "in", {{"train", {{"steps", 8}}}});
  const auto verbs = WritingVerbs(scenario);
  const fs::path ref = References(root, verbs);
  // 1 KiB: the first file fails; 12 KiB: what-if's point files fit, its results.json does not; the
  // model file (about 30 KiB) and simulate's timeline fail at both.
  for (rlim_t limit : {rlim_t{1024}, rlim_t{12 * 1024}}) {
    for (const auto& v : verbs) {
      // The limit would also hit validate's bench command (it inherits it) before simreplay writes
      // anything; validate's own writes meet the full disk in FullDiskLeavesNoPartialFile.
      if (v.name == "validate") continue;
      const std::string context = v.name + " with files limited to " + std::to_string(limit) + " bytes";
      fs::path out = root / ("out_" + std::to_string(limit)) / v.name;
      fs::create_directories(out);
      auto r = RunCliWithFileSizeLimit(WithOut(v, out.string()), limit);
      EXPECT_NE(r.exit_code, 0) << context << ": " << r.output;
      EXPECT_NE(r.output.find("File too large"), std::string::npos) << context << ": " << r.output;
      ExpectNothingPartial(out, ref / v.name, context, v.byte_stable);
    }
  }
}

TEST(Faults, FullDiskLeavesNoPartialFile) {
  if (!IsRoot()) GTEST_SKIP() << "a real full disk needs root (tmpfs); InjectedWriteFailures covers the rest";
  fs::path root = FreshDir("faults_tmpfs");
  const fs::path scenario = QuickstartScenario(root / "in", {{"train", {{"steps", 8}}}});
  const auto verbs = WritingVerbs(scenario);
  const fs::path ref = References(root, verbs);
  for (const auto& v : verbs) {
    // A file system of 8 KiB, and of about 60% of what the verb writes: it fails early and late.
    uintmax_t total_bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(ref / v.name)) {
      if (e.is_regular_file()) total_bytes += e.file_size();
    }
    const int late_kib = static_cast<int>(total_bytes * 6 / 10 / 4096 * 4);
    std::vector<int> sizes_kib = {8};
    if (late_kib > 8) sizes_kib.push_back(late_kib);
    for (int kib : sizes_kib) {
      const std::string context = v.name + " on a " + std::to_string(kib) + " KiB file system";
      fs::path mount_point = root / ("tmpfs_" + std::to_string(kib) + "_" + v.name);
      ScopedMount disk(mount_point, "-t tmpfs -o size=" + std::to_string(kib) + "k tmpfs");
      if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
      fs::create_directories(mount_point / "out");
      auto r = RunCliWithFileSizeLimit(WithOut(v, (mount_point / "out").string()), RLIM_INFINITY);
      EXPECT_NE(r.exit_code, 0) << context << ": " << r.output;
      EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << context << ": " << r.output;
      ExpectNothingPartial(mount_point / "out", ref / v.name, context, v.byte_stable);
    }
  }
}

TEST(Faults, UnwritableDirectoryIsAClearErrorForEveryVerb) {
  fs::path root = FreshDir("faults_readonly");
  const fs::path scenario = QuickstartScenario(root / "in", {{"train", {{"steps", 8}}}});
  const auto verbs = WritingVerbs(scenario);
  fs::path locked = root / "locked";
  fs::create_directories(locked);
  std::unique_ptr<ScopedMount> read_only;
  if (IsRoot()) {
    read_only = std::make_unique<ScopedMount>(locked, "--bind -o ro " + locked.string());
    if (!read_only->mounted()) GTEST_SKIP() << "cannot bind-mount read-only here (and root ignores 0555)";
  } else {
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  }
  for (const auto& v : verbs) {
    // The output is a new directory inside the locked one (calibrate: a file directly in it).
    const std::string out = v.out_leaf.empty() ? (locked / "out").string() : locked.string();
    auto r = RunCliWithFileSizeLimit(WithOut(v, out), RLIM_INFINITY);
    EXPECT_EQ(r.exit_code, 1) << v.name << ": " << r.output;
    EXPECT_NE(r.output.find(locked.string()), std::string::npos) << v.name << " names the path: " << r.output;
    EXPECT_TRUE(r.output.find("Read-only file system") != std::string::npos ||
                r.output.find("Permission denied") != std::string::npos)
        << v.name << " says why: " << r.output;
    // The error is one line, the last (simulate may print a note about the scenario's sweep first).
    const std::string last_line = r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1);
    EXPECT_EQ(last_line.rfind("simreplay " + v.name + ": ", 0), 0u) << v.name << ": " << r.output;
    EXPECT_NE(last_line.find(locked.string()), std::string::npos) << v.name << ": " << r.output;
  }
  EXPECT_TRUE(fs::is_empty(locked));
}

}  // namespace
}  // namespace simreplay::testing
