#include "replay/kineto_importer.h"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "replay/trace_reader.h"

namespace simreplay::replay {
namespace {

using nlohmann::json;

const std::string kDataDir = std::string(SIMREPLAY_SOURCE_DIR) + "/tests/data/kineto";
const std::string kResNet = kDataDir + "/kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
const std::string kDlrmTar = kDataDir + "/param_dlrm_kineto_8ranks.tar.gz";

// Temporary directories made by this binary, removed when it exits.
struct TempDirs {
  std::vector<std::string> paths;
  ~TempDirs() {
    for (const std::string& p : paths) {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  }
};

std::string MakeTempDir() {
  static TempDirs made;
  std::string pattern = ::testing::TempDir() + "kineto_importer_test.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  char* dir = mkdtemp(buffer.data());
  EXPECT_NE(dir, nullptr);
  if (dir != nullptr) made.paths.push_back(dir);
  return dir == nullptr ? std::string() : std::string(dir);
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The raw Chrome trace, independently of the importer (plain or gzip).
json ReadRawTrace(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return json();
  std::string text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(f, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  gzclose(f);
  return json::parse(text);
}

// The DLRM rank files, extracted once per test binary run; sorted by name (worker0 .. worker7).
const std::vector<std::string>& DlrmFiles() {
  static std::vector<std::string> files = [] {
    std::string dir = MakeTempDir();
    std::string command = "tar xzf '" + kDlrmTar + "' -C '" + dir + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::vector<std::string> out;
    for (int w = 0; w < 8; ++w) {
      std::string listing = dir + "/list.txt";
      std::string find = "ls " + dir + "/dlrm_kineto/worker" + std::to_string(w) + "_*.json > " + listing;
      EXPECT_EQ(std::system(find.c_str()), 0);
      std::string name = ReadText(listing);
      name.erase(name.find_last_not_of("\n") + 1);
      out.push_back(name);
    }
    return out;
  }();
  return files;
}

template <typename T>
std::vector<T> RecordsOf(const std::vector<TraceRecord>& records) {
  std::vector<T> out;
  for (const auto& r : records) {
    if (const T* t = std::get_if<T>(&r)) out.push_back(*t);
  }
  return out;
}

std::vector<json> SummaryEvents(const std::vector<TraceRecord>& records) {
  std::vector<json> out;
  for (const auto& r : RecordsOf<OtherRecord>(records)) {
    if (r.type == "event" && r.json.value("kind", "") == "kineto_summary") out.push_back(r.json);
  }
  return out;
}

bool IsCpuCategory(const json& e) {
  std::string cat = e.value("cat", "");
  return cat == "Operator" || cat == "cpu_op" || cat == "user_annotation";
}

int64_t EarliestCompleteEventUs(const json& raw) {
  int64_t earliest = INT64_MAX;
  for (const json& e : raw["traceEvents"]) {
    if (e.value("ph", "") == "X") earliest = std::min(earliest, e["ts"].get<int64_t>());
  }
  return earliest;
}

// ---------------------------------------------------------------------------------------------------
// Real traces.

TEST(KinetoImporter, ResNet50StepsAndWaitsMatchTheRawEvents) {
  KinetoImportOptions options;
  options.input_paths = {kResNet};
  auto imported = KinetoImporter::Convert(options);
  ASSERT_TRUE(imported.ok()) << imported.status().message();

  // Expectations found in the raw JSON, not through the importer. Its timestamps are integer us.
  json raw = ReadRawTrace(kResNet);
  ASSERT_TRUE(raw.contains("traceEvents"));
  const int64_t origin_us = EarliestCompleteEventUs(raw);
  std::map<int64_t, json> raw_steps;
  std::vector<json> raw_next;
  std::vector<json> raw_h2d;
  int64_t first_conv_ts = INT64_MAX;
  int64_t conv_batch = 0;
  for (const json& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    std::string name = e.value("name", "");
    if (IsCpuCategory(e) && name.rfind("ProfilerStep#", 0) == 0) raw_steps[std::stoll(name.substr(13))] = e;
    if (IsCpuCategory(e) && name.find("DataLoader") != std::string::npos &&
        name.find("__next__") != std::string::npos) {
      raw_next.push_back(e);
    }
    if (name.rfind("Memcpy HtoD", 0) == 0) raw_h2d.push_back(e);
    if (name == "aten::conv2d" && e["ts"].get<int64_t>() < first_conv_ts) {
      first_conv_ts = e["ts"].get<int64_t>();
      conv_batch = e["args"]["Input Dims"][0][0].get<int64_t>();
    }
  }
  ASSERT_EQ(raw_steps.size(), 6u);
  EXPECT_EQ(raw_steps.begin()->first, 5);
  EXPECT_EQ(raw_steps.rbegin()->first, 10);
  EXPECT_EQ(conv_batch, 32);  // the README: batch 32

  auto steps = RecordsOf<StepRecord>(imported->records);
  auto batches = RecordsOf<BatchRecord>(imported->records);
  ASSERT_EQ(steps.size(), 6u);
  ASSERT_EQ(batches.size(), 6u);
  EXPECT_EQ(imported->batch_size, conv_batch);
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    const BatchRecord& b = batches[i];
    SCOPED_TRACE("step " + std::to_string(s.step));
    ASSERT_TRUE(raw_steps.count(s.step));
    const json& raw_step = raw_steps[s.step];
    const int64_t ts = raw_step["ts"].get<int64_t>();
    const int64_t dur = raw_step["dur"].get<int64_t>();
    EXPECT_EQ(s.rank, 0);
    EXPECT_GT(s.step_ns, 0);
    EXPECT_EQ(s.step_ns, dur * 1000);
    EXPECT_EQ(s.t_start_ns, (ts - origin_us) * 1000);
    EXPECT_GT(s.compute_ns, 0);
    EXPECT_LE(s.compute_ns, s.step_ns);
    EXPECT_EQ(s.comm_ns, 0);  // one GPU, no NCCL
    EXPECT_EQ(s.micro_batches, 1);

    std::vector<json> inside;
    for (const json& n : raw_next) {
      if (n["ts"].get<int64_t>() >= ts && n["ts"].get<int64_t>() < ts + dur) inside.push_back(n);
    }
    ASSERT_EQ(inside.size(), 1u);
    int64_t next_ts = inside[0]["ts"].get<int64_t>();
    int64_t next_dur = inside[0]["dur"].get<int64_t>();
    EXPECT_EQ(b.batch, s.step);
    EXPECT_EQ(b.wait_ns, next_dur * 1000);
    EXPECT_EQ(b.t_ready_ns, (next_ts + next_dur - origin_us) * 1000);
    EXPECT_EQ(b.t_next_start_ns, (next_ts - origin_us) * 1000);
    EXPECT_EQ(b.worker, -1);  // _SingleProcessDataLoaderIter
    EXPECT_EQ(b.size, 32);
    EXPECT_EQ(b.collate_ns, 0);
    int64_t h2d_bytes = 0, h2d_us = 0;
    for (const json& c : raw_h2d) {
      if (c["ts"].get<int64_t>() >= ts && c["ts"].get<int64_t>() < ts + dur) {
        h2d_bytes += c["args"]["bytes"].get<int64_t>();
        h2d_us += c["dur"].get<int64_t>();
      }
    }
    EXPECT_EQ(b.h2d_bytes, h2d_bytes);
    EXPECT_EQ(b.h2d_ns, h2d_us * 1000);
    EXPECT_EQ(b.h2d_bytes, 32 * 3 * 224 * 224 * 4 + 32 * 8);  // float images + int64 labels
  }

  const json& m = imported->header.manifest;
  EXPECT_EQ(m["source"], "kineto");
  EXPECT_EQ(m["per_sample_costs"], "unknown");
  EXPECT_EQ(m["accelerator"], "cuda");
  EXPECT_EQ(m["world_size"], 1);
  EXPECT_EQ(m["loader"]["batch_size"], 32);
  EXPECT_EQ(m["loader"]["num_workers"], 0);
  EXPECT_NE(m["batch_size_source"].get<std::string>().find("aten::conv2d"), std::string::npos);
  EXPECT_EQ(m["hardware"]["gpus"][0]["name"], "Tesla V100-DGXS-32GB");
  EXPECT_EQ(m["inputs"], json::array({kResNet}));
  auto derived = m["derived"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(derived.begin(), derived.end(), "batch.size"), derived.end());
  EXPECT_EQ(std::find(derived.begin(), derived.end(), "batch.h2d_bytes"), derived.end());  // measured

  auto events = SummaryEvents(imported->records);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["steps"], 6);
  EXPECT_EQ(events[0]["nccl_ns"], 0);
  EXPECT_GT(events[0]["gpu_busy_ns"].get<int64_t>(), 0);
}

TEST(KinetoImporter, DlrmEightRanksTakeRankFromDistributedInfoAndHaveExposedNccl) {
  KinetoImportOptions options;
  options.input_paths = DlrmFiles();
  std::reverse(options.input_paths.begin(), options.input_paths.end());  // the order must not matter
  auto imported = KinetoImporter::Convert(options);
  ASSERT_TRUE(imported.ok()) << imported.status().message();

  ASSERT_EQ(imported->ranks.size(), 8u);
  EXPECT_EQ(imported->header.manifest["world_size"], 8);
  EXPECT_EQ(imported->batch_size, 16);  // aten::linear Input Dims [[16, 13], ...]
  for (int64_t r = 0; r < 8; ++r) {
    const KinetoRankSummary& summary = imported->ranks[r];
    SCOPED_TRACE(summary.path);
    EXPECT_EQ(summary.rank, r);
    EXPECT_EQ(ReadRawTrace(summary.path)["distributedInfo"]["rank"], r);
    EXPECT_EQ(summary.steps, 1);
    EXPECT_GT(summary.nccl_ns, 0);
    EXPECT_GT(summary.comm_ns_total, 0);
    EXPECT_LE(summary.comm_ns_total, summary.nccl_ns);
    EXPECT_GE(summary.gpu_busy_ns, summary.nccl_ns);
  }
  auto steps = RecordsOf<StepRecord>(imported->records);
  auto batches = RecordsOf<BatchRecord>(imported->records);
  ASSERT_EQ(steps.size(), 8u);
  ASSERT_EQ(batches.size(), 8u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].rank, static_cast<int64_t>(i));  // ascending rank
    EXPECT_EQ(steps[i].step, 10);                       // ProfilerStep#10
    EXPECT_GT(steps[i].comm_ns, 0);
    EXPECT_GT(batches[i].wait_ns, 0);
    EXPECT_GT(batches[i].pin_ns, 0);  // pin_memory=True in the main process
    EXPECT_GT(batches[i].h2d_bytes, 0);
    EXPECT_GE(steps[i].t_start_ns, 0);  // one origin for all ranks: no negative instants
  }
  EXPECT_EQ(SummaryEvents(imported->records).size(), 8u);
}

TEST(KinetoImporter, BothRealImportsReadBackWithTraceReader) {
  std::string dir = MakeTempDir();
  struct Case {
    std::vector<std::string> inputs;
    std::string out;
    size_t steps, batches, summaries;
  };
  std::vector<Case> cases = {{{kResNet}, dir + "/resnet.jsonl.gz", 6, 6, 1},
                             {DlrmFiles(), dir + "/dlrm.jsonl.gz", 8, 8, 8}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.out);
    KinetoImportOptions options;
    options.input_paths = c.inputs;
    auto imported = KinetoImporter::ImportToFile(options, c.out);
    ASSERT_TRUE(imported.ok()) << imported.status().message();

    auto reader = TraceReader::Open(c.out);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    EXPECT_EQ((*reader)->header().manifest, imported->header.manifest);
    size_t steps = 0, batches = 0, summaries = 0, footers = 0, others = 0;
    TraceRecord record;
    while (true) {
      auto more = (*reader)->Next(&record);
      ASSERT_TRUE(more.ok()) << more.status().message();
      if (!*more) break;
      if (std::holds_alternative<StepRecord>(record)) {
        ++steps;
      } else if (std::holds_alternative<BatchRecord>(record)) {
        ++batches;
      } else if (auto* o = std::get_if<OtherRecord>(&record); o && o->type == "event") {
        ++summaries;
      } else if (o && o->type == "footer") {
        ++footers;
      } else {
        ++others;
      }
    }
    EXPECT_EQ(steps, c.steps);
    EXPECT_EQ(batches, c.batches);
    EXPECT_EQ(summaries, c.summaries);
    EXPECT_EQ(footers, 1u);
    EXPECT_EQ(others, 0u);
    EXPECT_TRUE((*reader)->warnings().empty());
  }
}

// ---------------------------------------------------------------------------------------------------
// A hand-built trace with known intervals (us). Two steps: #0 = [100, 200), #1 = [200, 300).
//   compute kernels: [90,110] [105,120] [150,160] [250.5,260.25]
//   NCCL kernels:    [115,130] [155,170] [195,210]
// Step 0, clipped to the window: compute = [100,120]+[150,160] = 30 us; NCCL = [115,130]+[155,170]+
//   [195,200] = 35 us, of which [115,120] and [155,160] overlap compute: exposed 25 us; all kernels:
//   [100,130]+[150,170]+[195,200] = 55 us.
// Step 1: compute = 9.75 us; NCCL = [200,210] = 10 us, no overlap; all kernels = 19.75 us.
// The earliest complete event is the kernel at 90 us, so time 0 = 90 us.
struct Names {
  const char* cpu;  // ProfilerStep, DataLoader, aten ops
  const char* kernel;
  const char* memcpy;
  const char* runtime;
};
const Names kNames2022 = {"user_annotation", "kernel", "gpu_memcpy", "cuda_runtime"};
const Names kNames2021 = {"Operator", "Kernel", "Memcpy", "Runtime"};

json X(const std::string& cat, const std::string& name, double ts_us, double dur_us, json args = json::object()) {
  return {{"ph", "X"}, {"cat", cat},  {"name", name},  {"pid", 1},
          {"tid", 1},  {"ts", ts_us}, {"dur", dur_us}, {"args", args}};
}

json HandBuiltTrace(const Names& n, bool with_shapes = true) {
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"ts", 0}, {"args", {{"name", "python"}}}});
  events.push_back(X(n.cpu, "ProfilerStep#0", 100, 100));
  events.push_back(X(n.cpu, "ProfilerStep#1", 200, 100));
  events.push_back(X("gpu_user_annotation", "ProfilerStep#0", 100, 200));  // GPU-side copy: ignored
  events.push_back(X(n.runtime, "cudaLaunchKernel", 100, 200));            // not a kernel
  events.push_back(X(n.kernel, "void gemm_kernel<float>(...)", 90, 20));
  events.push_back(X(n.kernel, "void relu_kernel(...)", 105, 15));
  events.push_back(X(n.kernel, "void add_kernel(...)", 150, 10));
  events.push_back(X(n.kernel, "void late_kernel(...)", 250.5, 9.75));
  events.push_back(
      X(n.kernel, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 115, 15));
  events.push_back(X(n.kernel, "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", 155, 15));
  events.push_back(
      X(n.kernel, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 195, 15));
  events.push_back(X(n.cpu, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 101, 10));
  events.push_back(X(n.cpu, "aten::pin_memory", 102, 4));
  events.push_back(X(n.cpu, "aten::_pin_memory", 103, 2));  // nested in pin_memory: not counted twice
  events.push_back(
      X(n.memcpy, "Memcpy HtoD (Pinned -> Device)", 112, 2, {{"bytes", 4096}, {"memory bandwidth (GB/s)", 2.048}}));
  // No "bytes": 10 GB/s x 2000 ns = 20000 bytes.
  events.push_back(X(n.memcpy, "Memcpy HtoD (Pageable -> Device)", 140, 2, {{"memory bandwidth (GB/s)", 10.0}}));
  events.push_back(X(n.memcpy, "Memcpy DtoH (Device -> Pageable)", 150, 1, {{"bytes", 999}}));  // not H2D
  if (with_shapes) {
    events.push_back(X(n.cpu, "aten::conv2d", 130, 1, {{"Input Dims", {{4, 3, 32, 32}, {8, 3, 3, 3}}}}));
    events.push_back(X(n.cpu, "aten::linear", 120, 1, {{"Input Dims", {{8, 13}, {256, 13}, {256}}}}));
  } else {
    events.push_back(X(n.cpu, "aten::relu", 120, 1));
  }
  return {{"schemaVersion", 1}, {"traceEvents", events}};
}

class KinetoImporterHandBuilt : public ::testing::TestWithParam<Names> {};

TEST_P(KinetoImporterHandBuilt, KernelUnionAndExposedCommAreExact) {
  std::string path = MakeTempDir() + "/hand.json";
  WriteText(path, HandBuiltTrace(GetParam()).dump());
  KinetoImportOptions options;
  options.input_paths = {path};
  auto imported = KinetoImporter::Convert(options);
  ASSERT_TRUE(imported.ok()) << imported.status().message();

  auto steps = RecordsOf<StepRecord>(imported->records);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 0);
  EXPECT_EQ(steps[0].t_start_ns, 10000);
  EXPECT_EQ(steps[0].step_ns, 100000);
  EXPECT_EQ(steps[0].compute_ns, 30000);
  EXPECT_EQ(steps[0].comm_ns, 25000);
  EXPECT_EQ(steps[1].step, 1);
  EXPECT_EQ(steps[1].t_start_ns, 110000);
  EXPECT_EQ(steps[1].compute_ns, 9750);
  EXPECT_EQ(steps[1].comm_ns, 10000);

  auto events = SummaryEvents(imported->records);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["gpu_busy_ns"], 55000 + 19750);
  EXPECT_EQ(events[0]["nccl_ns"], 35000 + 10000);
  EXPECT_EQ(events[0]["steps"], 2);

  auto batches = RecordsOf<BatchRecord>(imported->records);
  ASSERT_EQ(batches.size(), 1u);  // step 1 has no DataLoader event
  const BatchRecord& b = batches[0];
  EXPECT_EQ(b.batch, 0);
  EXPECT_EQ(b.wait_ns, 10000);
  EXPECT_EQ(b.t_next_start_ns, 11000);
  EXPECT_EQ(b.t_ready_ns, 21000);
  EXPECT_EQ(b.pin_ns, 4000);
  EXPECT_EQ(b.h2d_ns, 4000);
  EXPECT_EQ(b.h2d_bytes, 4096 + 20000);
  EXPECT_EQ(b.size, 8);  // the earliest shape-bearing call is aten::linear [8, 13]
  EXPECT_EQ(b.worker, -1);
  ASSERT_EQ(imported->warnings.size(), 1u);
  EXPECT_NE(imported->warnings[0].find("without an enumerate(DataLoader)"), std::string::npos);

  auto derived = imported->header.manifest["derived"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(derived.begin(), derived.end(), "batch.h2d_bytes"), derived.end());
  EXPECT_EQ(imported->header.manifest["world_size"], 1);
  EXPECT_EQ(imported->header.manifest["rank"], 0);
}

INSTANTIATE_TEST_SUITE_P(CategoryGenerations, KinetoImporterHandBuilt, ::testing::Values(kNames2022, kNames2021),
                         [](const auto& info) {
                           return std::string(info.param.kernel) == "kernel" ? "Names2022" : "Names2021";
                         });

TEST(KinetoImporter, ReadsGzipAndTakesRanksFromFileOrder) {
  std::string dir = MakeTempDir();
  std::string plain = dir + "/a.json";
  std::string gz = dir + "/b.json.gz";
  WriteText(plain, HandBuiltTrace(kNames2022).dump());
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::string text = HandBuiltTrace(kNames2021).dump();
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);

  KinetoImportOptions options;
  options.input_paths = {gz, plain};  // no distributedInfo: rank = position
  auto imported = KinetoImporter::Convert(options);
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  ASSERT_EQ(imported->ranks.size(), 2u);
  EXPECT_EQ(imported->ranks[0].path, gz);
  EXPECT_EQ(imported->ranks[1].path, plain);
  EXPECT_EQ(imported->ranks[0].comm_ns_total, imported->ranks[1].comm_ns_total);
  EXPECT_EQ(imported->header.manifest["world_size"], 2);
  EXPECT_EQ(imported->header.manifest["kineto"]["files"][0]["rank_source"], "file order");
}

TEST(KinetoImporter, BatchSizeOptionWinsAndIsRequiredWithoutShapes) {
  std::string path = MakeTempDir() + "/noshapes.json";
  WriteText(path, HandBuiltTrace(kNames2022, /*with_shapes=*/false).dump());
  KinetoImportOptions options;
  options.input_paths = {path};
  auto failed = KinetoImporter::Convert(options);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message().rfind(path + ": ", 0), 0u) << failed.status().message();
  EXPECT_NE(failed.status().message().find("--batch-size"), std::string::npos);

  options.batch_size = 64;
  auto imported = KinetoImporter::Convert(options);
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  EXPECT_EQ(RecordsOf<BatchRecord>(imported->records).at(0).size, 64);
  EXPECT_EQ(imported->header.manifest["batch_size_source"], "--batch-size");
  auto derived = imported->header.manifest["derived"].get<std::vector<std::string>>();
  EXPECT_EQ(std::find(derived.begin(), derived.end(), "batch.size"), derived.end());
}

TEST(KinetoImporter, DuplicateRanksAreAnError) {
  std::string dir = MakeTempDir();
  json trace = HandBuiltTrace(kNames2022);
  trace["distributedInfo"] = {{"rank", 3}, {"world_size", 4}};
  WriteText(dir + "/a.json", trace.dump());
  WriteText(dir + "/b.json", trace.dump());
  KinetoImportOptions options;
  options.input_paths = {dir + "/a.json", dir + "/b.json"};
  auto imported = KinetoImporter::Convert(options);
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message().rfind(dir + "/b.json: rank 3", 0), 0u) << imported.status().message();
}

TEST(KinetoImporter, OutputIsDeterministic) {
  std::string dir = MakeTempDir();
  KinetoImportOptions options;
  options.input_paths = DlrmFiles();
  ASSERT_TRUE(KinetoImporter::ImportToFile(options, dir + "/one.jsonl").ok());
  ASSERT_TRUE(KinetoImporter::ImportToFile(options, dir + "/two.jsonl").ok());
  std::string one = ReadText(dir + "/one.jsonl");
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(one, ReadText(dir + "/two.jsonl"));
}

// ---------------------------------------------------------------------------------------------------
// Bad inputs: every error names the file first.

struct BadInput {
  const char* label;
  std::string content;
  const char* expected;  // part of the message
};

class KinetoImporterBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(KinetoImporterBadInput, ErrorNamesTheFile) {
  std::string path = MakeTempDir() + "/bad.json";
  WriteText(path, GetParam().content);
  KinetoImportOptions options;
  options.input_paths = {path};
  options.batch_size = 1;
  auto imported = KinetoImporter::Convert(options);
  ASSERT_FALSE(imported.ok());
  const std::string& message = imported.status().message();
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KinetoImporterBadInput,
    ::testing::Values(
        BadInput{"NotJson", "this is not JSON {", "not a JSON document"}, BadInput{"Empty", "", "not a JSON document"},
        BadInput{"MissingTraceEvents", R"({"schemaVersion": 1})", "no \"traceEvents\" array"},
        BadInput{"TopLevelArray", R"([{"ph":"X","name":"ProfilerStep#1","ts":1,"dur":1}])", "no \"traceEvents\" array"},
        BadInput{"NoProfilerStep", R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1}]})",
                 "no ProfilerStep#N events"},
        BadInput{"NonNumericTs",
                 R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"ProfilerStep#1","ts":"soon","dur":1}]})",
                 "\"ts\" must be"},
        BadInput{"NegativeDur",
                 R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"ProfilerStep#1","ts":5,"dur":-1}]})",
                 "\"dur\" must be"},
        // Regression (issue 13): ts + dur in ns overflowed int64 (undefined behaviour) before this check.
        BadInput{"RegressionEndPastInt64",
                 R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"ProfilerStep#1","ts":9e15,"dur":9e15}]})",
                 "ts + dur is past the largest time"},
        // Regression (fuzzing, 2026-12-02): a negative ts made the ts + dur overflow check overflow.
        BadInput{"RegressionNegativeTsOverflowedTheEndCheck",
                 R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"ProfilerStep#1","ts":-9e15,"dur":1}]})",
                 "\"ts\" must be a finite, non-negative number"},
        // Regression (issue 13): a non-string name threw type_error, reported as "not a JSON document".
        BadInput{"RegressionNonStringName", R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":7,"ts":1,"dur":1}]})",
                 "\"name\" must be a string, found number"}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(KinetoImporter, MissingFileIsAnError) {
  KinetoImportOptions options;
  options.input_paths = {"/nonexistent/trace.json"};
  auto imported = KinetoImporter::Convert(options);
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message().rfind("/nonexistent/trace.json: cannot open", 0), 0u);
}

// ---------------------------------------------------------------------------------------------------
// The verb: exit code 3 and one stderr line for a bad input; 0 and a readable trace otherwise.

int RunCli(const std::string& args, const std::string& stderr_path) {
  std::string command =
      std::string("'") + SIMREPLAY_BINARY + "' import kineto " + args + " > /dev/null 2> '" + stderr_path + "'";
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(KinetoImportCli, BadInputExitsThreeWithOneLine) {
  std::string dir = MakeTempDir();
  std::string bad = dir + "/bad.json";
  WriteText(bad, "{not json");
  EXPECT_EQ(RunCli("'" + bad + "' --out '" + dir + "/out.jsonl.gz'", dir + "/err.txt"), 3);
  std::string err = ReadText(dir + "/err.txt");
  EXPECT_EQ(err.rfind("simreplay import: " + bad + ": ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(access((dir + "/out.jsonl.gz").c_str(), F_OK), 0);  // nothing written
}

TEST(KinetoImportCli, ImportsAndUsageErrors) {
  std::string dir = MakeTempDir();
  std::string good = dir + "/good.json";
  WriteText(good, HandBuiltTrace(kNames2022).dump());
  EXPECT_EQ(RunCli("'" + good + "' --out '" + dir + "/out.jsonl.gz' --batch-size 8", dir + "/err.txt"), 0)
      << ReadText(dir + "/err.txt");
  EXPECT_TRUE(TraceReader::Open(dir + "/out.jsonl.gz").ok());
  EXPECT_EQ(RunCli("'" + good + "'", dir + "/err.txt"), 2);                               // no --out
  EXPECT_EQ(RunCli("'" + good + "' --out x.jsonl --batch-size 0", dir + "/err.txt"), 2);  // not positive
}

}  // namespace
}  // namespace simreplay::replay
