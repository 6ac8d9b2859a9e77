// The observed findings (advise/observed_*.h) on small synthetic traces written here, each expectation
// computed by hand in the comment beside it.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "advise/observations.h"
#include "advise/observed_report.h"

namespace simreplay::advise {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kMs = 1000000;
constexpr int64_t kS = 1000000000;
constexpr double kMiB = 1 << 20;

// A trace written line by line: a header with `manifest`, then the records added.
class TraceFile {
 public:
  explicit TraceFile(json manifest) { lines_.push_back({{"type", "header"}, {"schema", "simreplay.trace/1"}, {"manifest", manifest}}); }
  void Add(json record) { lines_.push_back(std::move(record)); }
  void Sample(int64_t rank, int64_t epoch, int64_t batch, int64_t worker, const std::string& format, int64_t read_ns,
              int64_t decode_ns, int64_t augment_ns, int64_t read_bytes = 1000) {
    Add({{"type", "sample"}, {"rank", rank}, {"epoch", epoch}, {"index", index_++}, {"batch", batch},
         {"worker", worker}, {"t_start_ns", 0}, {"read_ns", read_ns}, {"decode_ns", decode_ns},
         {"augment_ns", augment_ns}, {"read_bytes", read_bytes}, {"out_bytes", 10}, {"format", format},
         {"width", 1}, {"height", 1}, {"frames", 1}});
  }
  void Batch(int64_t rank, int64_t epoch, int64_t batch, int64_t wait_ns, int64_t t_ready_ns = 0) {
    Add({{"type", "batch"}, {"rank", rank}, {"epoch", epoch}, {"batch", batch}, {"worker", 0}, {"size", 2},
         {"collate_ns", 0}, {"t_ready_ns", t_ready_ns}, {"wait_ns", wait_ns}, {"pin_ns", 0}, {"h2d_ns", 0},
         {"h2d_bytes", 0}});
  }
  void Step(int64_t rank, int64_t step, int64_t t_start_ns, int64_t step_ns, int64_t comm_ns = 0) {
    Add({{"type", "step"}, {"rank", rank}, {"step", step}, {"t_start_ns", t_start_ns}, {"compute_ns", 0},
         {"comm_ns", comm_ns}, {"step_ns", step_ns}, {"micro_batches", 1}});
  }
  void Worker(int64_t worker, int64_t pid, int64_t t_ns, int64_t cpu_ns, double rss, double pss, int64_t io = 0) {
    Add({{"type", "worker"}, {"rank", 0}, {"worker", worker}, {"pid", pid}, {"t_ns", t_ns},
         {"rss_bytes", static_cast<int64_t>(rss)}, {"pss_bytes", static_cast<int64_t>(pss)}, {"cpu_ns", cpu_ns},
         {"io_read_bytes", io}});
  }
  void Epoch(int64_t t_ns) { Add({{"type", "event"}, {"t_ns", t_ns}, {"kind", "epoch_start"}}); }
  void Collective(int64_t rank, int64_t step, const std::string& op, int64_t t_ns, int64_t duration_ns) {
    Add({{"type", "collective"}, {"rank", rank}, {"step", step}, {"op", op}, {"bytes", 1024}, {"t_start_ns", t_ns},
         {"duration_ns", duration_ns}, {"world_size", 2}});
  }
  std::string Write(const std::string& name, bool footer = true) {
    const fs::path p = fs::path(::testing::TempDir()) / name;
    std::ofstream out(p);
    for (const auto& l : lines_) out << l.dump() << "\n";
    if (footer) out << json{{"type", "footer"}, {"records", lines_.size() - 1}}.dump() << "\n";
    return p.string();
  }

 private:
  std::vector<json> lines_;
  int64_t index_ = 0;
};

Observations Observe(const std::string& path, const ObserveOptions& options = {}) {
  auto o = ObserveTrace(path, options);
  EXPECT_TRUE(o.ok()) << o.status().message();
  return o.ok() ? *o : Observations{};
}

const StageDistribution* Stage(const std::vector<StageDistribution>& stages, const std::string& name) {
  for (const auto& s : stages) {
    if (s.stage == name) return &s;
  }
  return nullptr;
}

TEST(ObservedFindings, StagesHaveP99AndMediaTypesHaveTheirOwn) {
  TraceFile t(json{{"loader", {{"num_workers", 1}}}});
  for (int i = 1; i <= 100; ++i) t.Sample(0, 0, 0, 0, "jpeg", 0, i * kMs, 0);
  t.Sample(0, 0, 0, 0, "mp4", kMs, 10 * kMs, 0);
  t.Sample(0, 0, 0, 0, "mp4", 3 * kMs, 30 * kMs, 0);
  Observations o = Observe(t.Write("stages.jsonl"));
  // Overall decode: 1..100 ms with 10 and 30 added (102 values). Type 7: position 0.99 x 101 = 99.99
  // between the 100th (98 ms: 98 values of 1..98 plus the two extra) and the 101st (99 ms).
  const StageDistribution* decode = Stage(o.stages, "decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->count, 102);
  EXPECT_NEAR(decode->p99_s, 98.99e-3, 1e-12);
  ASSERT_EQ(o.media.size(), 2u);
  EXPECT_EQ(o.media[0].format, "jpeg");  // by name
  EXPECT_EQ(o.media[0].samples, 100);
  // jpeg decode 1..100 ms: p50 at 49.5 -> 50.5 ms; p99 at 98.01 -> 99.01 ms.
  const StageDistribution* jd = Stage(o.media[0].stages, "decode");
  ASSERT_NE(jd, nullptr);
  EXPECT_NEAR(jd->p50_s, 50.5e-3, 1e-12);
  EXPECT_NEAR(jd->p99_s, 99.01e-3, 1e-12);
  EXPECT_EQ(jd->record, "sample");
  // mp4 decode {10, 30} ms: p99 = 10 + 0.99 x 20 = 29.8 ms; read {1, 3} ms: mean 2 ms.
  EXPECT_EQ(o.media[1].format, "mp4");
  EXPECT_NEAR(Stage(o.media[1].stages, "decode")->p99_s, 29.8e-3, 1e-12);
  EXPECT_NEAR(Stage(o.media[1].stages, "read")->mean_s, 2e-3, 1e-12);
  json j;
  AddObservedFindingsJson(o, &j);
  EXPECT_EQ(j["media"][1]["stages"][1]["stage"], "decode");
  EXPECT_EQ(j["media"].size(), 2u);
}

TEST(ObservedFindings, PageFaultChurnIsSplitFromTheSamplesCpu) {
  // 80 worker samples: cpu = 2 ms + faults x 16 us, faults 0/200/400/600 in turn (mean 300): the fit
  // gives 16 us per fault and 4.8 / 6.8 = 70.6% of the CPU; 20 inline samples with 10 faults each
  // (cpu 2.16 ms) join the fit: mean faults (80 x 300 + 20 x 10) / 100 = 242.
  TraceFile u(json{{"loader", {{"num_workers", 2}}}});
  for (int i = 0; i < 100; ++i) {
    const bool inline_sample = i >= 80;
    const int64_t faults = inline_sample ? 10 : 200 * (i % 4);
    u.Add({{"type", "sample"}, {"rank", 0}, {"epoch", 0}, {"index", i}, {"batch", i / 8},
           {"worker", inline_sample ? -1 : i % 2}, {"t_start_ns", 0}, {"read_ns", 0}, {"decode_ns", 3 * kMs},
           {"augment_ns", 0}, {"read_bytes", 1000}, {"out_bytes", 10}, {"format", "jpeg"}, {"width", 1},
           {"height", 1}, {"frames", 1}, {"cpu_ns", 2 * kMs + faults * 16000}, {"minflt", faults}});
  }
  Observations o = Observe(u.Write("faults.jsonl"));
  const PageFaultObservation& pf = o.page_faults;
  ASSERT_TRUE(pf.visible);
  ASSERT_TRUE(pf.fit.measured) << pf.fit.note;
  EXPECT_NEAR(pf.fit.fault_cost_s, 16e-6, 1e-12);
  EXPECT_NEAR(pf.fit.faults_per_sample, 242, 1e-9);
  EXPECT_NEAR(pf.fit.cpu_share, 16e-6 * 242 / (2e-3 + 16e-6 * 242), 1e-9);
  EXPECT_DOUBLE_EQ(pf.worker_faults_per_sample, 300);
  EXPECT_DOUBLE_EQ(pf.inline_faults_per_sample, 10);
  EXPECT_TRUE(pf.worth_naming);
  json j;
  AddObservedFindingsJson(o, &j);
  EXPECT_EQ(j["page_faults"]["fix_to_try"], models::kMallocChurnFix);
  EXPECT_EQ(j["page_faults"]["from"]["records"]["sample"], 100);
  bool named = false;
  for (const auto& line : ObservedFindingLines(o)) {
    if (line.find("page faults: 242 per sample at 16.0 us each") != std::string::npos &&
        line.find("MALLOC_MMAP_THRESHOLD_") != std::string::npos) {
      named = true;
    }
  }
  EXPECT_TRUE(named);
  // A trace without minflt says it cannot see the churn.
  TraceFile old(json{{"loader", {{"num_workers", 2}}}});
  for (int i = 0; i < 10; ++i) old.Sample(0, 0, 0, 0, "jpeg", 0, kMs, 0);
  Observations without = Observe(old.Write("nofaults.jsonl"));
  EXPECT_FALSE(without.page_faults.visible);
  bool said = false;
  for (const auto& c : without.cannot_see) said = said || c.find("page-fault churn is not visible") != std::string::npos;
  EXPECT_TRUE(said);
}

// One worker's samples over two epochs: epoch 0 decodes (pixels, faults) (100, 1000), (40, 0), (30, 10),
// (60, 500), (100, 800), (20, 0), then 20 of (1, 0); epoch 1 (20, 300), (50, 200). Without persistent
// workers epoch 1 is a fresh process: the samples larger than half the largest before them in their
// lifetime are 100 (first), 60, 100 (> 50), and epoch 1's 20 (first) and 50 (> 10): 5 of 28 samples with
// 2800 of the 2810 faults. With persistent workers one lifetime: 20 and 50 are not over 50, so 3 samples
// with 2300. The top tenth (2 samples) took 1000 + 800. Only lifetimes of 20 samples or more count:
// epoch 0's, 2310 faults over 26 samples.
std::string ConcentrationTrace(TraceFile* t) {
  const std::vector<std::pair<int64_t, int64_t>> epoch0 = {{100, 1000}, {40, 0}, {30, 10}, {60, 500}, {100, 800}, {20, 0}};
  std::vector<std::tuple<int64_t, int64_t, int64_t>> samples;  // epoch, pixels, faults
  for (const auto& [px, f] : epoch0) samples.emplace_back(0, px, f);
  for (int i = 0; i < 20; ++i) samples.emplace_back(0, 1, 0);
  samples.emplace_back(1, 20, 300);
  samples.emplace_back(1, 50, 200);
  int i = 0;
  for (const auto& [epoch, px, f] : samples) {
    t->Add({{"type", "sample"}, {"rank", 0}, {"epoch", epoch}, {"index", i}, {"batch", i / 4}, {"worker", 0},
            {"t_start_ns", i * kMs}, {"read_ns", 0}, {"decode_ns", kMs}, {"augment_ns", 0}, {"read_bytes", 1000},
            {"out_bytes", 10}, {"format", "jpeg"}, {"width", px}, {"height", 1}, {"frames", 1},
            {"cpu_ns", kMs + f * 10000}, {"minflt", f}});
    ++i;
  }
  return t->Write("concentration.jsonl");
}

TEST(ObservedFindings, PageFaultsConcentrateInSamplesLargerThanTheirProcessHadDecoded) {
  TraceFile fresh(json{{"loader", {{"num_workers", 1}, {"persistent_workers", false}}}});
  const FaultConcentration w = Observe(ConcentrationTrace(&fresh)).page_faults.where;
  EXPECT_DOUBLE_EQ(w.top_tenth_share, 1800.0 / 2810);
  EXPECT_DOUBLE_EQ(w.larger_samples_share, 5.0 / 28);
  EXPECT_DOUBLE_EQ(w.larger_faults_share, 2800.0 / 2810);
  EXPECT_EQ(w.lifetimes, 1);
  EXPECT_DOUBLE_EQ(w.lifetime_min_faults_per_sample, 2310.0 / 26);
  EXPECT_DOUBLE_EQ(w.lifetime_max_faults_per_sample, 2310.0 / 26);
  TraceFile kept(json{{"loader", {{"num_workers", 1}, {"persistent_workers", true}}}});
  Observations persistent = Observe(ConcentrationTrace(&kept));
  const FaultConcentration& p = persistent.page_faults.where;
  EXPECT_DOUBLE_EQ(p.larger_samples_share, 3.0 / 28);
  EXPECT_DOUBLE_EQ(p.larger_faults_share, 2300.0 / 2810);
  EXPECT_EQ(p.lifetimes, 1);
  EXPECT_DOUBLE_EQ(p.lifetime_min_faults_per_sample, 2810.0 / 28);
  json j;
  AddObservedFindingsJson(persistent, &j);
  EXPECT_NEAR(j["page_faults"]["concentration"]["larger_faults_share"].get<double>(), 2300.0 / 2810, 1e-9);  // rounded to 9 digits
  EXPECT_EQ(j["page_faults"]["concentration"]["lifetimes"], 1);
  // Without decoded sizes the rule cannot be applied: null, not 0%.
  TraceFile unsized(json{{"loader", {{"num_workers", 1}}}});
  for (int k = 0; k < 30; ++k) {
    unsized.Add({{"type", "sample"}, {"rank", 0}, {"epoch", 0}, {"index", k}, {"batch", 0}, {"worker", 0},
                 {"t_start_ns", k}, {"read_ns", 0}, {"decode_ns", kMs}, {"augment_ns", 0}, {"read_bytes", 1},
                 {"out_bytes", 1}, {"format", "jpeg"}, {"width", 0}, {"height", 0}, {"frames", 0},
                 {"cpu_ns", kMs}, {"minflt", k}});
  }
  const FaultConcentration u = Observe(unsized.Write("unsized.jsonl")).page_faults.where;
  EXPECT_LT(u.larger_faults_share, 0);
  EXPECT_GT(u.top_tenth_share, 0);
}

TEST(ObservedFindings, WorkerBusyFractionAndHostCpuBusy) {
  TraceFile t(json{{"hardware", {{"cores", 2}, {"threads", 4}}}});
  t.Worker(0, 100, 0, 0, 1, 1);
  t.Worker(0, 100, 1 * kS, kS / 2, 1, 1);
  t.Worker(0, 100, 2 * kS, 3 * kS / 2, 1, 1);  // 1.5 s CPU over 2 s: 0.75
  t.Worker(1, 101, 0, 0, 1, 1);
  t.Worker(1, 101, 2 * kS, kS / 2, 1, 1);      // a non-persistent worker: 0.5 s over 2 s ...
  t.Worker(1, 102, 3 * kS, 0, 1, 1);
  t.Worker(1, 102, 5 * kS, 3 * kS / 2, 1, 1);  // ... then its successor 1.5 s over 2 s: 2 / 4 = 0.5
  t.Worker(1, 103, 6 * kS, 0, 1, 1);           // one record: no window
  t.Add({{"type", "host"}, {"t_ns", 0}, {"mem_used_bytes", 1}, {"cpu_busy_ns", 10 * kS}});
  t.Add({{"type", "host"}, {"t_ns", 2 * kS}, {"mem_used_bytes", 1}, {"cpu_busy_ns", 16 * kS}});
  Observations o = Observe(t.Write("cpu.jsonl"));
  ASSERT_EQ(o.cpu.processes.size(), 2u);
  EXPECT_DOUBLE_EQ(o.cpu.processes[0].busy_fraction, 0.75);
  EXPECT_EQ(o.cpu.processes[1].processes, 2);
  EXPECT_EQ(o.cpu.processes[1].records, 5);
  EXPECT_DOUBLE_EQ(o.cpu.processes[1].busy_fraction, 0.5);
  EXPECT_DOUBLE_EQ(o.cpu.mean_worker_busy_fraction, 0.625);
  EXPECT_EQ(o.cpu.worker_from.records.at("worker"), 8);
  // Host: 6 busy CPU-seconds over 2 s = 3 CPUs of the 4 logical CPUs /proc/stat counts.
  EXPECT_DOUBLE_EQ(o.cpu.host_busy_cpus, 3);
  EXPECT_EQ(o.cpu.host_cpus, 4);
  EXPECT_EQ(o.cpu.host_cpus_source, "manifest.hardware.threads");
  EXPECT_DOUBLE_EQ(o.cpu.host_busy_fraction, 0.75);
  EXPECT_EQ(o.cpu.host_from.records.at("host"), 2);
}

TEST(ObservedFindings, HostCpuFallsBackToCoresAndSaysSo) {
  TraceFile t(json{{"hardware", {{"cores", 8}}}});
  t.Add({{"type", "host"}, {"t_ns", 0}, {"mem_used_bytes", 1}, {"cpu_busy_ns", 0}});
  t.Add({{"type", "host"}, {"t_ns", kS}, {"mem_used_bytes", 1}, {"cpu_busy_ns", 2 * kS}});
  Observations o = Observe(t.Write("cpu_cores.jsonl"));
  EXPECT_EQ(o.cpu.host_cpus_source, "manifest.hardware.cores");
  EXPECT_DOUBLE_EQ(o.cpu.host_busy_fraction, 0.25);
}

// Worker 0: RSS flat at 100 MiB, PSS 50 -> 90 MiB at 10 MiB/s: copy-on-read. Worker 1: RSS and PSS
// grow 20 MiB/s: a leak. The main process wobbles around 50 MiB (slope -0.1 MiB/s): no growth.
TraceFile MemoryTrace(bool persistent) {
  TraceFile t(json{{"loader", {{"num_workers", 2}, {"persistent_workers", persistent}}},
               {"hardware", {{"ram_bytes", static_cast<int64_t>(64 * 1024 * kMiB)}}}});
  t.Epoch(0);
  t.Epoch(10 * kS);  // epoch_s = 10 s
  const double main_pss[] = {50, 52, 49, 51, 50};
  for (int i = 0; i < 5; ++i) {
    t.Worker(0, 100, i * kS, 0, 100 * kMiB, (50 + 10 * i) * kMiB);
    t.Worker(1, 101, i * kS, 0, (100 + 20 * i) * kMiB, (100 + 20 * i) * kMiB);
    t.Worker(-1, 1, i * kS, 0, main_pss[i] * kMiB, main_pss[i] * kMiB);
  }
  for (int s = 0; s < 10; ++s) t.Step(0, s, s * kS, kS);  // wall 10 s, 1 s per step
  t.Add({{"type", "host"}, {"t_ns", 0}, {"mem_used_bytes", static_cast<int64_t>(1024 * kMiB)}, {"cpu_busy_ns", 0}});
  return t;
}

const ProcessMemoryGrowth& Process(const Observations& o, int64_t worker) {
  for (const auto& p : o.worker_memory.processes) {
    if (p.worker == worker) return p;
  }
  static ProcessMemoryGrowth none;
  ADD_FAILURE() << "no process for worker " << worker;
  return none;
}

TEST(ObservedFindings, WorkerMemoryGrowthIsFlaggedAndProjected) {
  ObserveOptions options;
  options.horizon.steps = 100;
  options.horizon.source = "scenario test.json: train.steps";
  Observations o = Observe(MemoryTrace(true).Write("memory.jsonl"), options);
  const WorkerMemoryObservation& m = o.worker_memory;
  EXPECT_DOUBLE_EQ(m.horizon.epoch_s, 10);
  EXPECT_DOUBLE_EQ(m.horizon.run_s, 100);  // 100 steps x the observed 1 s per step
  EXPECT_NE(m.horizon.run_from.find("scenario test.json"), std::string::npos) << m.horizon.run_from;
  EXPECT_EQ(m.leaking, 1);
  EXPECT_EQ(m.copy_on_read, 1);
  const ProcessMemoryGrowth& w0 = Process(o, 0);
  EXPECT_EQ(w0.growth, "copy_on_read");
  EXPECT_NEAR(w0.pss.slope_bytes_per_s, 10 * kMiB, 1e-3);
  EXPECT_NEAR(w0.rss.slope_bytes_per_s, 0, 1e-9);
  // Persistent: from 90 MiB at t = 4 s to the epoch's end (10 s): 90 + 6 x 10 = 150 MiB; to the run's
  // end (100 s): 90 + 96 x 10 = 1050 MiB.
  EXPECT_NEAR(w0.projected_epoch_end_pss_bytes, 150 * kMiB, 1);
  EXPECT_NEAR(w0.projected_run_end_pss_bytes, 1050 * kMiB, 1);
  const ProcessMemoryGrowth& w1 = Process(o, 1);
  EXPECT_EQ(w1.growth, "leak");
  EXPECT_NEAR(w1.projected_run_end_pss_bytes, (180 + 96 * 20) * kMiB, 1);
  const ProcessMemoryGrowth& main = Process(o, -1);
  EXPECT_EQ(main.growth, "none");
  EXPECT_NEAR(main.pss.slope_bytes_per_s, -0.1 * kMiB, 1);
  EXPECT_NEAR(main.projected_run_end_pss_bytes, 50 * kMiB, 1);  // shrinking: projected flat
  EXPECT_EQ(m.from.records.at("worker"), 15);
  // Headroom: 1 GiB in use of 64 GiB (manifest: no mem_total_bytes in the host record); with the
  // projected growth (960 + 1920 MiB) the run's end would see 1024 + 2880 MiB.
  EXPECT_EQ(o.headroom.total_from, "manifest.hardware.ram_bytes");
  EXPECT_NEAR(o.headroom.projected_run_end_peak_bytes, (1024 + 960 + 1920) * kMiB, 1);
  EXPECT_FALSE(o.headroom.projected_exceeds_total);
}

TEST(ObservedFindings, RestartedWorkersAreProjectedOneEpochAtATime) {
  Observations o = Observe(MemoryTrace(false).Write("memory_restart.jsonl"), {{100, 0, 0, "scenario s.json"}, nullptr});
  // A worker restarted every epoch starts at 0 s and lives to 10 s: 150 MiB, also at the run's end.
  EXPECT_NEAR(Process(o, 0).projected_epoch_end_pss_bytes, 150 * kMiB, 1);
  EXPECT_NEAR(Process(o, 0).projected_run_end_pss_bytes, 150 * kMiB, 1);
  EXPECT_TRUE(o.worker_memory.horizon.workers_restart_each_epoch);
}

TEST(ObservedFindings, WithoutARunLengthMemoryIsNotProjectedToTheRunsEnd) {
  Observations o = Observe(MemoryTrace(true).Write("memory_nohorizon.jsonl"));
  EXPECT_LT(Process(o, 0).projected_run_end_pss_bytes, 0);
  EXPECT_NEAR(Process(o, 0).projected_epoch_end_pss_bytes, 150 * kMiB, 1);
  bool said = false;
  for (const auto& c : o.cannot_see) said = said || c.find("run's length is not known") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(ObservedFindings, GrowthRuleNeedsAClearLine) {
  // 3 points rising 8 MiB over 2 s from 100 MiB: 8 >= max(8, 5) MiB and r2 = 1: clearly growing.
  EXPECT_TRUE(FitGrowth({0, 1, 2}, {100 * kMiB, 104 * kMiB, 108 * kMiB}).clearly_growing);
  // The same rise from 200 MiB is under 5% (10 MiB): not clear.
  EXPECT_FALSE(FitGrowth({0, 1, 2}, {200 * kMiB, 204 * kMiB, 208 * kMiB}).clearly_growing);
  // Two points are never enough.
  EXPECT_FALSE(FitGrowth({0, 1}, {100 * kMiB, 200 * kMiB}).clearly_growing);
  // A rise that a line explains badly (r2 = 0.2 < 0.5).
  const GrowthFit noisy = FitGrowth({0, 1, 2, 3}, {100 * kMiB, 300 * kMiB, 100 * kMiB, 300 * kMiB});
  EXPECT_NEAR(noisy.r2, 0.2, 1e-12);
  EXPECT_FALSE(noisy.clearly_growing);
}

TEST(ObservedFindings, HeadroomFromTheHostRecordsTotalAndPeak) {
  TraceFile t(json{{"hardware", {{"ram_bytes", 99}}}});
  t.Add({{"type", "host"}, {"t_ns", 0}, {"mem_used_bytes", 10 * 1024 * 1024 * 1024LL}, {"cpu_busy_ns", 0},
         {"mem_total_bytes", 16 * 1024 * 1024 * 1024LL}});
  t.Add({{"type", "host"}, {"t_ns", kS}, {"mem_used_bytes", 12 * 1024 * 1024 * 1024LL}, {"cpu_busy_ns", 0},
         {"mem_total_bytes", 16 * 1024 * 1024 * 1024LL}, {"mem_peak_bytes", 13 * 1024 * 1024 * 1024LL}});
  Observations o = Observe(t.Write("headroom.jsonl"));
  const HostHeadroom& h = o.headroom;
  ASSERT_TRUE(h.visible);
  EXPECT_EQ(h.peak_from, "host.mem_peak_bytes");
  EXPECT_EQ(h.total_from, "host.mem_total_bytes");  // kept by the reader, preferred to the manifest's
  EXPECT_DOUBLE_EQ(h.headroom_bytes, 3 * 1024 * kMiB);
  EXPECT_DOUBLE_EQ(h.headroom_fraction, 3.0 / 16);
  EXPECT_FALSE(h.low);
  EXPECT_LT(h.projected_run_end_peak_bytes, 0);  // no run length
}

TEST(ObservedFindings, LowHeadroomFromTheManifestTotal) {
  TraceFile t(json{{"hardware", {{"ram_bytes", 14 * 1024 * 1024 * 1024LL}}}});
  t.Add({{"type", "host"}, {"t_ns", 0}, {"mem_used_bytes", 13 * 1024 * 1024 * 1024LL}, {"cpu_busy_ns", 0}});
  Observations o = Observe(t.Write("headroom_low.jsonl"));
  EXPECT_EQ(o.headroom.total_from, "manifest.hardware.ram_bytes");
  EXPECT_NEAR(o.headroom.headroom_fraction, 1.0 / 14, 1e-12);
  EXPECT_TRUE(o.headroom.low);
}

TEST(ObservedFindings, EpochBoundaryStallsAgainstTheSteadyMedian) {
  TraceFile t(json{{"loader", {{"num_workers", 2}}}});
  const int64_t waits[3][6] = {{100, 100, 10, 10, 10, 10}, {50, 30, 10, 12, 10, 8}, {11, 10, 10, 10, 10, 10}};
  for (int e = 0; e < 3; ++e) {
    for (int b = 0; b < 6; ++b) t.Batch(0, e, b, waits[e][b] * kMs);
  }
  Observations o = Observe(t.Write("stalls.jsonl"));
  const EpochStalls& s = o.epoch_stalls;
  ASSERT_TRUE(s.visible);
  EXPECT_EQ(s.boundary_batches, 2);  // one per worker
  EXPECT_EQ(s.steady_batches, 12);
  EXPECT_NEAR(s.steady_median_wait_s, 10e-3, 1e-12);
  ASSERT_EQ(s.epochs.size(), 2u);
  // Epoch 1: 50 + 30 = 80 ms, mean 40 > 2 x 10 + 1: a stall of 80 - 2 x 10 = 60 ms.
  EXPECT_TRUE(s.epochs[0].stall);
  EXPECT_NEAR(s.epochs[0].excess_s, 60e-3, 1e-12);
  // Epoch 2: 11 + 10 = 21 ms, mean 10.5: no stall, 1 ms over.
  EXPECT_FALSE(s.epochs[1].stall);
  EXPECT_NEAR(s.epochs[1].excess_s, 1e-3, 1e-12);
  EXPECT_EQ(s.stalls, 1);
  EXPECT_NEAR(s.excess_s, 61e-3, 1e-12);
  EXPECT_EQ(s.from.records.at("batch"), 18);
}

TEST(ObservedFindings, HeadOfLineBlockingBehindTheSlowestSample) {
  TraceFile t(json::object());
  // Batch 0 waited 30 ms; samples 10, 10, 50 ms: slowest - median = 40 ms, so all 30 ms count.
  t.Sample(0, 0, 0, 0, "jpeg", 0, 10 * kMs, 0);
  t.Sample(0, 0, 0, 0, "jpeg", 0, 10 * kMs, 0);
  t.Sample(0, 0, 0, 0, "jpeg", 20 * kMs, 20 * kMs, 10 * kMs);
  t.Batch(0, 0, 0, 30 * kMs);
  // Batch 1 waited 20 ms; samples 10, 12, 14 ms: 2 ms count.
  for (int ms : {10, 12, 14}) t.Sample(0, 0, 1, 0, "jpeg", 0, ms * kMs, 0);
  t.Batch(0, 0, 1, 20 * kMs);
  // Batch 2 did not wait: not counted.
  for (int ms : {10, 90}) t.Sample(0, 0, 2, 0, "jpeg", 0, ms * kMs, 0);
  t.Batch(0, 0, 2, 0);
  Observations o = Observe(t.Write("hol.jsonl"));
  const HeadOfLine& h = o.head_of_line;
  ASSERT_TRUE(h.visible);
  EXPECT_EQ(h.batches, 2);
  EXPECT_NEAR(h.data_wait_s, 50e-3, 1e-12);
  EXPECT_NEAR(h.behind_slowest_s, 32e-3, 1e-12);
  EXPECT_NEAR(h.share, 0.64, 1e-12);
  EXPECT_NEAR(h.mean_slowest_over_median, (5 + 14.0 / 12) / 2, 1e-12);
  EXPECT_EQ(h.from.records.at("sample"), 6);
}

TEST(ObservedFindings, StragglerAndCollectiveShareFromAMultiRankTrace) {
  TraceFile t(json::object());
  for (int s = 0; s < 6; ++s) {
    const int64_t t0 = s * 100 * kMs;
    t.Step(0, s, t0, 100 * kMs, 2 * kMs);
    t.Step(1, s, t0, 100 * kMs, 2 * kMs);
    // Rank 1 issues 2 ms after rank 0 in five steps; in step 3 rank 0 is 1 ms late.
    const int64_t r0 = t0 + 50 * kMs + (s == 3 ? kMs : 0), r1 = t0 + 50 * kMs + (s == 3 ? 0 : 2 * kMs);
    t.Collective(0, s, "all_reduce", r0, 4 * kMs);
    t.Collective(1, s, "all_reduce", r1, 4 * kMs);
    t.Collective(0, s, "broadcast", r0 + kMs, 2 * kMs);  // inside the all-reduce: union unchanged
  }
  Observations o = Observe(t.Write("ranks.jsonl"));
  const CollectiveStragglers& c = o.collectives;
  ASSERT_TRUE(c.visible);
  EXPECT_EQ(c.groups, 6);  // the broadcasts met no other rank's
  EXPECT_DOUBLE_EQ(c.straggler_share, 0.75);
  ASSERT_EQ(c.by_rank.size(), 2u);
  EXPECT_EQ(c.by_rank[1].last_arrivals, 5);
  EXPECT_NEAR(c.by_rank[1].last_share, 5.0 / 6, 1e-12);
  EXPECT_TRUE(c.by_rank[1].straggler);
  EXPECT_FALSE(c.by_rank[0].straggler);
  EXPECT_NEAR(c.by_rank[1].mean_lateness_s, 10e-3 / 6, 1e-12);
  EXPECT_NEAR(c.by_rank[0].mean_lateness_s, 1e-3 / 6, 1e-12);
  // Rank 0: 6 x 4 ms of collectives in 6 x 100 ms of steps; exposed 6 x 2 ms.
  EXPECT_NEAR(c.by_rank[0].collective_share, 0.04, 1e-12);
  EXPECT_NEAR(c.by_rank[0].exposed_comm_share, 0.02, 1e-12);
  EXPECT_EQ(c.from.records.at("collective"), 18);
  EXPECT_EQ(o.ranks, 2);
}

// The same collectives as two rank traces given together (the per-rank files of a torchrun capture).
TEST(ObservedFindings, RankTracesGivenTogetherAreOneRun) {
  TraceFile r0(json::object()), r1(json::object());
  for (int s = 0; s < 6; ++s) {
    const int64_t t0 = s * 100 * kMs;
    r0.Step(0, s, t0, 100 * kMs);
    r1.Step(1, s, t0, 100 * kMs);
    r0.Collective(0, s, "all_reduce", t0 + 50 * kMs, 4 * kMs);
    r1.Collective(1, s, "all_reduce", t0 + 53 * kMs, kMs);  // always 3 ms late
  }
  auto o = ObserveTraces({r0.Write("rank0.jsonl"), r1.Write("rank1.jsonl")});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->ranks, 2);
  EXPECT_EQ(o->trace_paths.size(), 2u);
  const CollectiveStragglers& c = o->collectives;
  EXPECT_EQ(c.groups, 6);
  ASSERT_EQ(c.by_rank.size(), 2u);
  EXPECT_EQ(c.by_rank[1].last_arrivals, 6);
  EXPECT_TRUE(c.by_rank[1].straggler);
  EXPECT_NEAR(c.by_rank[1].mean_lateness_s, 3e-3, 1e-12);
  EXPECT_NEAR(c.by_rank[1].collective_share, 0.01, 1e-12);  // 1 ms of every 100 ms step
}

TEST(ObservedFindings, BadCollectiveRecordIsAnErrorNamingFileAndLine) {
  TraceFile t(json::object());
  t.Step(0, 0, 0, kMs);
  t.Collective(0, 0, "all_reduce", 0, -5);
  auto o = ObserveTrace(t.Write("bad_collective.jsonl"));
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("bad_collective.jsonl:3:"), std::string::npos) << o.status().message();
  EXPECT_NE(o.status().message().find("duration_ns"), std::string::npos) << o.status().message();
}

TEST(ObservedFindings, AnIterableDatasetWorkerThatGotNothing) {
  TraceFile t(json{{"loader", {{"num_workers", 3}, {"sampler", "_InfiniteConstantSampler"}}}});
  for (int i = 0; i < 4; ++i) t.Sample(0, 0, 0, 0, "tar", 0, kMs, 0);
  for (int i = 0; i < 2; ++i) t.Sample(0, 0, 1, 1, "tar", 0, kMs, 0);
  Observations o = Observe(t.Write("iterable.jsonl"));
  const SamplesPerWorker& s = o.samples_per_worker;
  EXPECT_EQ(s.dataset, "iterable");
  ASSERT_EQ(s.workers.size(), 3u);
  EXPECT_EQ(s.workers[0].samples, 4);
  EXPECT_EQ(s.workers[1].samples, 2);
  ASSERT_EQ(s.idle.size(), 1u);
  EXPECT_EQ(s.idle[0].worker, 2);
  EXPECT_DOUBLE_EQ(s.max_over_min, 2);
  bool said = false;
  for (const auto& l : ObservedFindingLines(o)) said = said || l.find("1 worker(s) got nothing") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(ObservedFindings, StorageThroughputAgainstAProbeCeiling) {
  TraceFile t(json{{"loader", {{"shuffle", false}}}});
  t.Epoch(0);
  for (int i = 0; i < 4; ++i) t.Sample(0, 0, 0, 0, "jpeg", 10 * kMs, kMs, 0, static_cast<int64_t>(kMiB));
  t.Step(0, 0, 0, kS);  // wall 1 s
  t.Worker(0, 100, 0, 0, 1, 1, 0);
  t.Worker(0, 100, kS, 0, 1, 1, static_cast<int64_t>(2 * kMiB));
  const std::string path = t.Write("storage.jsonl");
  StorageProbeFits probe;
  probe.file = "probe.json";
  probe.random = {true, 1 * kMiB, 0, 0};
  probe.sequential = {true, 4.5 * kMiB, 0, 0};
  Observations o = Observe(path, {RunHorizon{}, &probe});
  const StorageThroughput& s = o.storage;
  ASSERT_TRUE(s.visible);
  EXPECT_DOUBLE_EQ(s.delivered_bytes_per_s, 4 * kMiB);  // 4 MiB over 1 s
  EXPECT_DOUBLE_EQ(s.per_read_bytes_per_s, 100 * kMiB);  // 1 MiB in 10 ms
  EXPECT_NEAR(s.mean_reads_in_flight, 0.04, 1e-12);
  EXPECT_DOUBLE_EQ(s.device_bytes_per_s, 2 * kMiB);
  EXPECT_EQ(s.ceiling.pattern, "sequential");  // the loader does not shuffle
  EXPECT_NEAR(s.ceiling_share, 4 / 4.5, 1e-12);
  EXPECT_TRUE(s.near_ceiling);
  EXPECT_EQ(s.from.inputs.at(0), "probe probe.json (fit.sequential.peak_bytes_per_s)");
  probe.sequential.peak_bytes_per_s = 8 * kMiB;
  EXPECT_FALSE(Observe(path, {RunHorizon{}, &probe}).storage.near_ceiling);
  probe.sequential.present = false;  // falls back to the random fit, and says so
  const StorageThroughput fallback = Observe(path, {RunHorizon{}, &probe}).storage;
  EXPECT_EQ(fallback.ceiling.pattern, "random");
  EXPECT_NE(fallback.ceiling.pattern_why.find("no sequential peak"), std::string::npos);
  EXPECT_NEAR(fallback.ceiling_share, 4, 1e-12);
  EXPECT_FALSE(Observe(path).storage.has_ceiling);
}

TEST(ObservedFindings, NoSampleRecordsStillGivesTheRestAndSaysWhatItCannotSee) {
  TraceFile t(json{{"hardware", {{"threads", 2}}}});
  t.Batch(0, 0, 0, kMs);
  t.Step(0, 0, 0, kS);
  t.Worker(0, 100, 0, 0, 1, 1);
  t.Worker(0, 100, kS, kS / 2, 1, 1);
  Observations o = Observe(t.Write("no_samples.jsonl"));
  EXPECT_FALSE(o.has_sample_records);
  EXPECT_FALSE(o.head_of_line.visible);
  EXPECT_FALSE(o.storage.visible);
  EXPECT_TRUE(o.media.empty());
  EXPECT_DOUBLE_EQ(o.cpu.mean_worker_busy_fraction, 0.5);
  ASSERT_FALSE(o.cannot_see.empty());
  EXPECT_NE(o.cannot_see[0].find("no sample records"), std::string::npos);
}

TEST(ObservedFindings, NanInAWorkerRecordIsAnErrorNamingFileAndLine) {
  const fs::path p = fs::path(::testing::TempDir()) / "nan_worker.jsonl";
  std::ofstream(p) << R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})" "\n"
                   << R"({"type":"worker","rank":0,"worker":0,"pid":1,"t_ns":0,"rss_bytes":NaN,"pss_bytes":1,"cpu_ns":0,"io_read_bytes":0})"
                   << "\n";
  auto o = ObserveTrace(p.string());
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("nan_worker.jsonl:2"), std::string::npos) << o.status().message();
}

TEST(ObservedFindings, FindingsJsonIsTheSameBytesEveryRun) {
  ObserveOptions options;
  options.horizon = {100, 0, 0, "scenario s.json"};
  const std::string path = MemoryTrace(true).Write("determinism.jsonl");
  json a, b;
  AddObservedFindingsJson(Observe(path, options), &a);
  AddObservedFindingsJson(Observe(path, options), &b);
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(a["worker_memory"]["processes"].size(), 3u);
  EXPECT_EQ(a["worker_memory"]["from"]["records"]["worker"], 15);
}

}  // namespace
}  // namespace simreplay::advise
