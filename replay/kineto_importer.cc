#include "replay/kineto_importer.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "replay/trace_writer.h"

namespace simreplay::replay {

namespace {

using nlohmann::json;

// Half-open interval [start_ns, end_ns) on one file's clock, in ns.
struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Sorted, disjoint, non-empty intervals covering the same time as `v`.
std::vector<Interval> Union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t Length(const std::vector<Interval>& u) {
  int64_t total = 0;
  for (const Interval& i : u) total += i.end_ns - i.start_ns;
  return total;
}

// REQUIRES: `u` sorted and disjoint (as Union() returns), so ends are sorted too.
std::vector<Interval> Clip(const std::vector<Interval>& u, Interval window) {
  std::vector<Interval> out;
  auto it =
      std::upper_bound(u.begin(), u.end(), window.start_ns, [](int64_t t, const Interval& i) { return t < i.end_ns; });
  for (; it != u.end() && it->start_ns < window.end_ns; ++it) {
    Interval c{std::max(it->start_ns, window.start_ns), std::min(it->end_ns, window.end_ns)};
    if (c.end_ns > c.start_ns) out.push_back(c);
  }
  return out;
}

// Time covered by both; REQUIRES: both sorted and disjoint.
int64_t OverlapLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
    int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

bool ContainsNoCase(const std::string& haystack, const std::string& lower_needle) {
  std::string lower(haystack);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find(lower_needle) != std::string::npos;
}

// Chrome trace times are microseconds, integer or fractional. Integers convert exactly; a fraction is
// split off before scaling so that large timestamps (~1.7e15 us since the epoch) keep what sub-us
// precision the double still holds.
std::optional<int64_t> MicrosToNs(const json& v) {
  constexpr int64_t kMaxUs = std::numeric_limits<int64_t>::max() / 1000 - 1;
  if (v.is_number_unsigned()) {
    uint64_t us = v.get<uint64_t>();
    if (us > static_cast<uint64_t>(kMaxUs)) return std::nullopt;
    return static_cast<int64_t>(us) * 1000;
  }
  if (v.is_number_integer()) {
    int64_t us = v.get<int64_t>();
    if (us > kMaxUs || us < -kMaxUs) return std::nullopt;
    return us * 1000;
  }
  if (v.is_number_float()) {
    double us = v.get<double>();
    if (!std::isfinite(us) || std::fabs(us) > static_cast<double>(kMaxUs)) return std::nullopt;
    double whole = std::floor(us);
    return static_cast<int64_t>(whole) * 1000 + std::llround((us - whole) * 1000.0);
  }
  return std::nullopt;
}

// Category names of the two Kineto generations (2021 / 2022+).
enum class Category { kCpu, kKernel, kMemcpy, kOther };
Category Classify(const std::string& cat) {
  if (cat == "Operator" || cat == "cpu_op" || cat == "user_annotation") return Category::kCpu;
  if (cat == "Kernel" || cat == "kernel") return Category::kKernel;
  if (cat == "Memcpy" || cat == "gpu_memcpy") return Category::kMemcpy;
  return Category::kOther;  // Runtime/cuda_runtime, Memset, gpu_user_annotation, python_function, ...
}

struct Step {
  int64_t number = 0;
  Interval window;
};

struct LoaderNext {
  Interval span;
  bool single_process = false;
};

struct HostToDevice {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t bytes = 0;
  bool bytes_derived = false;  // from "memory bandwidth (GB/s)" x duration
  bool bytes_unknown = false;
};

struct BatchGuess {
  int64_t start_ns = 0;
  int64_t size = 0;
  std::string what;  // "aten::conv2d Input Dims[0][0]"
};

// Everything the importer keeps of one input file; the events themselves are dropped while parsing.
struct ParsedFile {
  std::string path;
  std::optional<int64_t> rank;        // distributedInfo.rank
  std::optional<int64_t> world_size;  // distributedInfo.world_size
  json distributed_info;
  json device_properties;
  std::optional<int64_t> gpu_device;  // "device" of the first kernel
  int64_t earliest_ns = std::numeric_limits<int64_t>::max();
  bool recorded_shapes = false;
  std::optional<BatchGuess> batch_guess;
  std::vector<Step> steps;
  std::vector<Interval> compute_kernels;
  std::vector<Interval> nccl_kernels;
  std::vector<HostToDevice> h2d;
  std::vector<LoaderNext> loader_next;
  std::vector<Interval> pins;
};

Status ReadWholeFile(const std::string& path, std::string* out) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (file == nullptr) return Status::NotFound(path + ": cannot open: " + std::strerror(errno ? errno : ENOENT));
  gzbuffer(file, 1 << 18);
  std::string data;
  std::vector<char> buffer(1 << 20);
  while (true) {
    int n = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int err = 0;
      std::string message = gzerror(file, &err);
      gzclose(file);
      return Status::Corruption(path + ": read error: " + message);
    }
    if (n == 0) break;
    data.append(buffer.data(), static_cast<size_t>(n));
  }
  int err = Z_OK;
  std::string message = gzerror(file, &err);
  gzclose(file);
  if (err == Z_BUF_ERROR) return Status::Corruption(path + ": gzip stream ends early (truncated file)");
  if (err != Z_OK && err != Z_STREAM_END) return Status::Corruption(path + ": read error: " + message);
  *out = std::move(data);
  return Status::Ok();
}

// Batch size from the recorded input shapes of a call whose first dimension is the batch, or nothing.
std::optional<BatchGuess> GuessBatch(const std::string& name, const json& args, int64_t start_ns) {
  auto it = args.find("Input Dims");
  if (it == args.end() || !it->is_array()) return std::nullopt;
  const json& dims = *it;
  auto first_dim = [&](size_t input, size_t rank_min, size_t rank_max) -> std::optional<int64_t> {
    if (dims.size() <= input || !dims[input].is_array()) return std::nullopt;
    const json& shape = dims[input];
    if (shape.size() < rank_min || shape.size() > rank_max || !shape[0].is_number_integer()) return std::nullopt;
    int64_t n = shape[0].get<int64_t>();
    if (n <= 0) return std::nullopt;
    return n;
  };
  std::optional<int64_t> n;
  size_t input = 0;
  // Unbatched convolution inputs (C,H,W) are skipped: only the batched rank gives N.
  if (name == "aten::conv1d") n = first_dim(0, 3, 3);
  if (name == "aten::conv2d") n = first_dim(0, 4, 4);
  if (name == "aten::conv3d") n = first_dim(0, 5, 5);
  if (name == "aten::linear") n = first_dim(0, 2, 8);
  if (name == "aten::embedding_bag") {
    // (weight, input, offsets, ...): a 2-D input is (batch, bag); a 1-D input has one offset per bag.
    input = 1;
    n = first_dim(1, 2, 2);
    if (!n) {
      input = 2;
      n = first_dim(2, 1, 1);
    }
  }
  if (!n) return std::nullopt;
  return BatchGuess{start_ns, *n, name + " Input Dims[" + std::to_string(input) + "][0]"};
}

class EventSink {
 public:
  explicit EventSink(ParsedFile* file) : file_(file) {}
  const Status& status() const { return status_; }

  // Takes one traceEvents element. Returns false after the first malformed event.
  bool Add(const json& e) {
    if (!status_.ok()) return false;
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || *ph != "X") return true;  // only complete events matter
    // Not e.value("name", ""): that throws type_error for a non-string name.
    std::string name;
    if (auto n = e.find("name"); n != e.end()) {
      if (!n->is_string()) return Fail("an event's \"name\" must be a string, found " + std::string(n->type_name()));
      name = n->get<std::string>();
    }
    std::string cat;
    if (auto c = e.find("cat"); c != e.end() && c->is_string()) cat = c->get<std::string>();
    auto ts = e.find("ts");
    auto dur = e.find("dur");
    // Plain integers (-1: absent or invalid) rather than optionals: GCC 12 warned an optional's value
    // "may be used uninitialized" where it had been checked (-Wmaybe-uninitialized, a false positive).
    const int64_t start_ns = ts == e.end() ? -1 : MicrosToNs(*ts).value_or(-1);
    const int64_t duration_ns = dur == e.end() ? -1 : MicrosToNs(*dur).value_or(-1);
    // Kineto's ts are microseconds on a clock that starts at or after 0; a negative ts made the
    // overflow check below (max - ts) itself overflow (found by fuzzing, 2026-12-02).
    if (start_ns < 0) {
      return Fail("event \"" + name + "\": \"ts\" must be a finite, non-negative number of microseconds");
    }
    if (duration_ns < 0) {
      return Fail("event \"" + name + "\" at ts " + ts->dump() + ": \"dur\" must be a non-negative number");
    }
    // ts and dur are each below 2^63 ns but their sum need not be: adding them would be signed overflow.
    if (duration_ns > std::numeric_limits<int64_t>::max() - start_ns) {
      return Fail("event \"" + name + "\" at ts " + ts->dump() + ": ts + dur is past the largest time representable");
    }
    file_->earliest_ns = std::min(file_->earliest_ns, start_ns);
    Interval span{start_ns, start_ns + duration_ns};
    static const json kNoArgs = json::object();
    const json* args = &kNoArgs;
    if (auto a = e.find("args"); a != e.end() && a->is_object()) args = &*a;

    switch (Classify(cat)) {
      case Category::kKernel:
        if (!file_->gpu_device) {
          if (auto d = args->find("device"); d != args->end() && d->is_number_integer())
            file_->gpu_device = d->get<int64_t>();
        }
        (ContainsNoCase(name, "nccl") ? file_->nccl_kernels : file_->compute_kernels).push_back(span);
        break;
      case Category::kMemcpy:
        if (name.starts_with("Memcpy HtoD")) AddHostToDevice(*args, span);
        break;
      case Category::kCpu:
        AddCpuEvent(name, *args, span);
        break;
      case Category::kOther:
        break;
    }
    return true;
  }

 private:
  bool Fail(const std::string& message) {
    status_ = Status::Corruption(file_->path + ": " + message);
    return false;
  }

  void AddHostToDevice(const json& args, Interval span) {
    // One copy larger than any device memory (1 TiB) is not a real copy: its bytes are unknown (and
    // the batch sums cannot overflow; the fuzzer once made one of 9.2e18 bytes wrap negative).
    constexpr double kMaxCopyBytes = 1099511627776.0;
    HostToDevice copy{span.start_ns, span.end_ns - span.start_ns};
    auto bytes = args.find("bytes");
    auto bandwidth = args.find("memory bandwidth (GB/s)");
    const double from_bandwidth = bandwidth != args.end() && bandwidth->is_number()
                                      ? bandwidth->get<double>() * static_cast<double>(copy.dur_ns)
                                      : -1;  // GB/s x ns = bytes (1e9 B/s x 1e-9 s)
    if (bytes != args.end() && bytes->is_number() && bytes->get<double>() >= 0 &&
        bytes->get<double>() <= kMaxCopyBytes) {
      copy.bytes = bytes->is_number_integer() ? bytes->get<int64_t>() : std::llround(bytes->get<double>());
    } else if (std::isfinite(from_bandwidth) && from_bandwidth >= 0 && from_bandwidth <= kMaxCopyBytes) {
      copy.bytes = std::llround(from_bandwidth);
      copy.bytes_derived = true;
    } else {
      copy.bytes_unknown = true;
    }
    file_->h2d.push_back(copy);
  }

  void AddCpuEvent(const std::string& name, const json& args, Interval span) {
    if (name.starts_with("ProfilerStep#")) {
      std::string digits = name.substr(std::strlen("ProfilerStep#"));
      if (!digits.empty() && digits.size() < 18 &&
          std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
        file_->steps.push_back(Step{std::stoll(digits), span});
      }
      return;
    }
    if (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__")) {
      file_->loader_next.push_back(LoaderNext{span, name.find("_SingleProcessDataLoaderIter") != std::string::npos});
      return;
    }
    if (name == "aten::pin_memory" || name == "aten::_pin_memory") {
      file_->pins.push_back(span);
      return;
    }
    if (args.contains("Input Dims")) file_->recorded_shapes = true;
    if (file_->batch_guess && file_->batch_guess->start_ns <= span.start_ns) return;
    if (auto guess = GuessBatch(name, args, span.start_ns)) file_->batch_guess = std::move(guess);
  }

  ParsedFile* file_;
  Status status_;
};

Result<ParsedFile> ParseFile(const std::string& path) {
  ParsedFile file;
  file.path = path;
  std::string text;
  SIMREPLAY_RETURN_IF_ERROR(ReadWholeFile(path, &text));
  EventSink sink(&file);
  json root;
  try {
    // Events are consumed as they are parsed and dropped from the tree: a 35 MB trace never exists as
    // a whole DOM.
    root = json::parse(text, [&sink](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_end && depth == 2 && parsed.contains("ph")) {
        sink.Add(parsed);
        return false;
      }
      return true;
    });
  } catch (const json::exception& e) {
    return Status::InvalidArgument(path + ": not a JSON document: " + e.what());
  }
  if (!sink.status().ok()) return sink.status();
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array()) {
    return Status::InvalidArgument(path + ": no \"traceEvents\" array: not a torch.profiler Chrome trace");
  }
  if (file.steps.empty()) {
    return Status::InvalidArgument(path +
                                   ": no ProfilerStep#N events: profile the training loop with a "
                                   "torch.profiler schedule and call prof.step() each step");
  }
  if (auto d = root.find("distributedInfo"); d != root.end() && d->is_object()) {
    file.distributed_info = *d;
    if (auto r = d->find("rank"); r != d->end()) {
      if (!r->is_number_integer() || r->get<int64_t>() < 0) {
        return Status::InvalidArgument(path + ": distributedInfo.rank must be a non-negative integer, found " +
                                       r->dump());
      }
      file.rank = r->get<int64_t>();
    }
    if (auto w = d->find("world_size"); w != d->end() && w->is_number_integer() && w->get<int64_t>() > 0) {
      file.world_size = w->get<int64_t>();
    }
  }
  if (auto p = root.find("deviceProperties"); p != root.end() && p->is_array()) file.device_properties = *p;

  std::sort(file.steps.begin(), file.steps.end(), [](const Step& a, const Step& b) { return a.number < b.number; });
  for (size_t i = 1; i < file.steps.size(); ++i) {
    if (file.steps[i].number == file.steps[i - 1].number) {
      return Status::InvalidArgument(path + ": ProfilerStep#" + std::to_string(file.steps[i].number) + " occurs twice");
    }
  }
  std::sort(file.loader_next.begin(), file.loader_next.end(), [](const LoaderNext& a, const LoaderNext& b) {
    return std::tie(a.span.start_ns, a.span.end_ns, a.single_process) <
           std::tie(b.span.start_ns, b.span.end_ns, b.single_process);
  });
  std::sort(file.h2d.begin(), file.h2d.end(), [](const HostToDevice& a, const HostToDevice& b) {
    return std::tie(a.start_ns, a.dur_ns, a.bytes) < std::tie(b.start_ns, b.dur_ns, b.bytes);
  });
  return file;
}

// Events of `sorted` (by start) that start inside `window`.
template <typename T, typename StartOf>
std::pair<size_t, size_t> StartingIn(const std::vector<T>& sorted, Interval window, StartOf start_of) {
  auto lo =
      std::partition_point(sorted.begin(), sorted.end(), [&](const T& x) { return start_of(x) < window.start_ns; });
  auto hi = std::partition_point(lo, sorted.end(), [&](const T& x) { return start_of(x) < window.end_ns; });
  return {static_cast<size_t>(lo - sorted.begin()), static_cast<size_t>(hi - sorted.begin())};
}

}  // namespace

Result<KinetoImport> KinetoImporter::Convert(const KinetoImportOptions& options) {
  if (options.input_paths.empty()) return Status::InvalidArgument("kineto import: no input files");
  if (options.batch_size < 0) {
    return Status::InvalidArgument("kineto import: batch size must be positive, found " +
                                   std::to_string(options.batch_size));
  }
  std::vector<ParsedFile> files;
  for (const std::string& path : options.input_paths) {
    auto parsed = ParseFile(path);
    if (!parsed.ok()) return parsed.status();
    files.push_back(std::move(*parsed));
  }

  KinetoImport out;
  // Ranks: distributedInfo.rank, else the file's position in the list.
  std::map<int64_t, size_t> file_of_rank;
  for (size_t i = 0; i < files.size(); ++i) {
    int64_t rank = files[i].rank.value_or(static_cast<int64_t>(i));
    auto [it, inserted] = file_of_rank.emplace(rank, i);
    if (!inserted) {
      return Status::InvalidArgument(files[i].path + ": rank " + std::to_string(rank) + " is also the rank of " +
                                     files[it->second].path);
    }
  }
  int64_t world_size = static_cast<int64_t>(files.size());
  for (const ParsedFile& f : files) {
    if (f.world_size) world_size = std::max(world_size, *f.world_size);
  }
  world_size = std::max(world_size, file_of_rank.rbegin()->first + 1);

  // Batch size: the option, else the first file whose shapes give one.
  if (options.batch_size > 0) {
    out.batch_size = options.batch_size;
    out.batch_size_source = "--batch-size";
  } else {
    for (const ParsedFile& f : files) {
      if (f.batch_guess) {
        out.batch_size = f.batch_guess->size;
        out.batch_size_source = f.path + ": " + f.batch_guess->what;
        break;
      }
    }
    if (out.batch_size == 0) {
      const ParsedFile& f = files.front();
      return Status::InvalidArgument(
          f.path + (f.recorded_shapes ? ": no aten::conv*/aten::linear/aten::embedding_bag call with recorded "
                                        "input shapes to derive the batch size from; pass --batch-size N"
                                      : ": the trace recorded no input shapes (record_shapes=False), so the batch "
                                        "size cannot be derived; pass --batch-size N"));
    }
  }

  // One time origin for all ranks: the earliest complete event of any input, so every instant is >= 0.
  int64_t origin_ns = std::numeric_limits<int64_t>::max();
  std::string origin_file;
  for (const ParsedFile& f : files) {
    if (f.earliest_ns < origin_ns) {
      origin_ns = f.earliest_ns;
      origin_file = f.path;
    }
  }

  bool any_bytes_derived = false;
  bool any_multi_process = false;
  bool all_single_process = true;
  for (const auto& [rank, index] : file_of_rank) {
    const ParsedFile& f = files[index];
    const std::vector<Interval> compute = Union(f.compute_kernels);
    const std::vector<Interval> nccl = Union(f.nccl_kernels);
    std::vector<Interval> all_kernels = f.compute_kernels;
    all_kernels.insert(all_kernels.end(), f.nccl_kernels.begin(), f.nccl_kernels.end());
    const std::vector<Interval> busy = Union(std::move(all_kernels));
    const std::vector<Interval> pins = Union(f.pins);

    KinetoRankSummary summary;
    summary.path = f.path;
    summary.rank = rank;
    int64_t steps_without_loader = 0;
    int64_t copies_without_bytes = 0;
    for (const Step& step : f.steps) {
      const Interval w = step.window;
      const std::vector<Interval> compute_w = Clip(compute, w);
      const std::vector<Interval> nccl_w = Clip(nccl, w);
      StepRecord s;
      s.rank = rank;
      s.step = step.number;
      s.t_start_ns = w.start_ns - origin_ns;
      s.step_ns = w.end_ns - w.start_ns;
      s.compute_ns = Length(compute_w);
      s.comm_ns = Length(nccl_w) - OverlapLength(nccl_w, compute_w);
      s.micro_batches = 1;
      summary.steps += 1;
      summary.step_ns_total += s.step_ns;
      summary.compute_ns_total += s.compute_ns;
      summary.comm_ns_total += s.comm_ns;
      summary.nccl_ns += Length(nccl_w);
      summary.gpu_busy_ns += Length(Clip(busy, w));

      auto [lo, hi] = StartingIn(f.loader_next, w, [](const LoaderNext& n) { return n.span.start_ns; });
      if (lo == hi) {
        ++steps_without_loader;
        out.records.push_back(s);
        continue;
      }
      BatchRecord b;
      b.rank = rank;
      b.epoch = 0;
      b.batch = step.number;
      b.worker = -1;
      b.size = out.batch_size;
      b.collate_ns = 0;
      b.t_next_start_ns = f.loader_next[lo].span.start_ns - origin_ns;
      int64_t ready_ns = f.loader_next[lo].span.end_ns;
      for (size_t i = lo; i < hi; ++i) {
        b.wait_ns += f.loader_next[i].span.end_ns - f.loader_next[i].span.start_ns;
        ready_ns = std::max(ready_ns, f.loader_next[i].span.end_ns);
        if (!f.loader_next[i].single_process) {
          any_multi_process = true;
          all_single_process = false;
        }
      }
      b.t_ready_ns = ready_ns - origin_ns;
      b.pin_ns = Length(Clip(pins, w));
      auto [clo, chi] = StartingIn(f.h2d, w, [](const HostToDevice& c) { return c.start_ns; });
      for (size_t i = clo; i < chi; ++i) {
        b.h2d_ns += f.h2d[i].dur_ns;
        b.h2d_bytes += f.h2d[i].bytes;
        any_bytes_derived = any_bytes_derived || f.h2d[i].bytes_derived;
        if (f.h2d[i].bytes_unknown) ++copies_without_bytes;
      }
      summary.batches += 1;
      summary.wait_ns_total += b.wait_ns;
      summary.h2d_bytes_total += b.h2d_bytes;
      out.records.push_back(b);
      out.records.push_back(s);
    }
    if (steps_without_loader > 0) {
      out.warnings.push_back(f.path + ": " + std::to_string(steps_without_loader) +
                             " ProfilerStep(s) without an enumerate(DataLoader)#...__next__ event: step "
                             "records only, no batch records");
    }
    if (copies_without_bytes > 0) {
      out.warnings.push_back(f.path + ": " + std::to_string(copies_without_bytes) +
                             " Memcpy HtoD event(s) with neither \"bytes\" nor a bandwidth: counted as 0 bytes");
    }
    json event = {{"t_ns", f.steps.front().window.start_ns - origin_ns},
                  {"kind", "kineto_summary"},
                  {"rank", rank},
                  {"file", f.path},
                  {"steps", summary.steps},
                  {"gpu_busy_ns", summary.gpu_busy_ns},
                  {"nccl_ns", summary.nccl_ns}};
    out.records.push_back(OtherRecord{"event", std::move(event)});
    out.ranks.push_back(std::move(summary));
  }
  if (any_multi_process) {
    out.warnings.push_back(
        "a _MultiProcessingDataLoaderIter trace does not say which worker made a batch: "
        "batch.worker is -1");
  }

  // Header.
  json derived = {"step.compute_ns", "step.comm_ns", "batch.t_ready_ns", "batch.collate_ns"};
  if (options.batch_size <= 0) derived.push_back("batch.size");
  if (any_bytes_derived) derived.push_back("batch.h2d_bytes");
  if (any_multi_process) derived.push_back("batch.worker");
  json& m = out.header.manifest;
  m["source"] = "kineto";
  m["inputs"] = options.input_paths;
  m["per_sample_costs"] = "unknown";
  m["derived"] = std::move(derived);
  m["accelerator"] = "cuda";
  m["world_size"] = world_size;
  json ranks = json::array();
  for (const auto& [rank, index] : file_of_rank) ranks.push_back(rank);
  m["ranks"] = std::move(ranks);
  if (file_of_rank.size() == 1) m["rank"] = file_of_rank.begin()->first;
  m["loader"] = {{"batch_size", out.batch_size}};
  if (all_single_process &&
      !std::all_of(out.ranks.begin(), out.ranks.end(), [](const KinetoRankSummary& r) { return r.batches == 0; })) {
    m["loader"]["num_workers"] = 0;
  }
  m["batch_size_source"] = out.batch_size_source;
  json kineto_files = json::array();
  for (const auto& [rank, index] : file_of_rank) {
    const ParsedFile& f = files[index];
    json entry = {{"path", f.path}, {"rank", rank}, {"rank_source", f.rank ? "distributedInfo" : "file order"}};
    if (!f.distributed_info.is_null()) entry["distributed_info"] = f.distributed_info;
    if (!f.device_properties.is_null()) entry["device_properties"] = f.device_properties;
    if (f.gpu_device) entry["gpu_device"] = *f.gpu_device;
    kineto_files.push_back(std::move(entry));
  }
  m["kineto"] = {{"files", std::move(kineto_files)}, {"time_origin", {{"file", origin_file}, {"ts_ns", origin_ns}}}};
  // hardware.gpus: the GPUs the first file with deviceProperties lists (all GPUs the host showed).
  for (const ParsedFile& f : files) {
    if (!f.device_properties.is_array() || f.device_properties.empty()) continue;
    json gpus = json::array();
    for (const json& p : f.device_properties) {
      if (!p.is_object()) continue;
      json gpu = json::object();
      if (p.contains("name")) gpu["name"] = p["name"];
      if (p.contains("totalGlobalMem")) gpu["memory_bytes"] = p["totalGlobalMem"];
      gpus.push_back(std::move(gpu));
    }
    m["hardware"] = {{"gpus", std::move(gpus)}};
    break;
  }
  return out;
}

Result<KinetoImport> KinetoImporter::ImportToFile(const KinetoImportOptions& options, const std::string& output_path) {
  auto converted = Convert(options);
  if (!converted.ok()) return converted.status();
  SIMREPLAY_RETURN_IF_ERROR(Write(*converted, output_path));
  return converted;
}

Status KinetoImporter::Write(const KinetoImport& import, const std::string& output_path) {
  auto writer = TraceWriter::Create(output_path, import.header);
  if (!writer.ok()) return writer.status();
  for (const TraceRecord& record : import.records) SIMREPLAY_RETURN_IF_ERROR((*writer)->Write(record));
  return (*writer)->Close();
}

}  // namespace simreplay::replay
