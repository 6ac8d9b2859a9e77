#include "calibrate/calibrator.h"

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "calibrate/cpu_probe.h"
#include "models/model_params.h"
#include "replay/trace_writer.h"
#include "sim/point_runner.h"

namespace simreplay::calibrate {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "calibrator_test.XXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Known parameters of the synthetic capture.
struct Known {
  int workers = 1;
  int cores = 4;
  int batch_size = 4;
  int batches = 40;
  double cpu_share = 0.5;  // cpu_ns = share x (read + decode + augment)
  double decode_s_per_pixel = 40e-9;
  double augment_s = 0.002;
  double read_latency_s = 50e-6;
  double read_bytes_per_s = 1e9;
  double step_s = 0.020;
  double main_ready_wait_s = 0.0005;  // next() on an already finished batch
  // true: the loop calls next() 1 ms after the batch is ready (a step-bound loop);
  // false: as soon as the previous step ends, waiting for the batch when it is not ready (loader-bound).
  bool next_after_ready = true;
  double cost_factor = 1.0;       // decode and augment x this (a slower repetition of the same run)
  int shutdown_after_batch = -1;  // >= 0: epoch 0 ends there, its workers joined in shutdown_s
  double shutdown_s = 0.03;
  double fault_cost_s = 0;  // > 0: each sample takes minflt page faults, each costing this much thread CPU
  double first_sample_extra_cpu_s = 0;  // > 0: the worker's first sample costs this much more (its warm-up)
};

// A single-worker capture whose timeline is consistent: the worker produces batches back to back, the
// loop asks 1 ms after each is ready, gets it after main_ready_wait_s, and steps for step_s.
std::string WriteSynthetic(const TempDir& dir, const Known& k, const std::string& name) {
  replay::TraceHeader header;
  header.manifest = {{"source", "synthetic"},
                     {"hardware", {{"cores", k.cores}, {"ram_bytes", int64_t{16} << 30}}},
                     {"loader",
                      {{"num_workers", k.workers},
                       {"batch_size", k.batch_size},
                       {"prefetch_factor", 2},
                       {"pin_memory", false},
                       {"persistent_workers", false}}},
                     {"data", {{"files", k.batches * k.batch_size}, {"bytes", 1 << 20}, {"format", "files"}}},
                     {"accelerator", "emulated"}};
  const std::string path = dir.File(name);
  auto writer = replay::TraceWriter::Create(path, header);
  EXPECT_TRUE(writer.ok());
  const int64_t ms = 1'000'000;
  // iter() at 0 takes 5 ms (spawn); the worker's first sample starts at 10 ms (5 ms start-up).
  EXPECT_TRUE(
      (*writer)
          ->Write(replay::OtherRecord{
              "event", {{"type", "event"}, {"t_ns", 0}, {"kind", "epoch_start"}, {"epoch", 0}, {"iter_ns", 5 * ms}}})
          .ok());
  int64_t t = 10 * ms;  // worker clock
  int64_t loop = 0;     // training loop clock
  for (int b = 0; b < k.batches; ++b) {
    const int64_t batch_start = t;
    for (int i = 0; i < k.batch_size; ++i) {
      replay::SampleRecord s;
      s.index = b * k.batch_size + i;
      s.batch = b;
      s.worker = 0;
      s.t_start_ns = t;
      s.read_bytes = 20'000 + 3'000 * ((b * 7 + i * 3) % 11);
      s.read_ns = std::llround((k.read_latency_s + s.read_bytes / k.read_bytes_per_s) * 1e9);
      s.width = 100 + 20 * ((b + i) % 5);
      s.height = 80 + 10 * ((b * 3 + i) % 7);
      s.frames = 1;
      s.decode_ns = std::llround(k.cost_factor * k.decode_s_per_pixel * s.width * s.height * 1e9);
      s.augment_ns = std::llround(k.cost_factor * k.augment_s * 1e9);
      s.format = "jpeg";
      s.out_bytes = 3 * 64 * 64 * 4;
      s.cpu_ns = std::llround(k.cpu_share * (s.read_ns + s.decode_ns + s.augment_ns));
      if (b == 0 && i == 0 && k.first_sample_extra_cpu_s > 0) {  // all CPU, in the decode
        const int64_t extra_ns = std::llround(k.first_sample_extra_cpu_s * 1e9);
        s.cpu_ns += extra_ns;
        s.decode_ns += extra_ns;
      }
      if (k.fault_cost_s > 0) {  // faulting is all CPU, in the decode
        s.minflt = 20 + 40 * ((b * 5 + i * 7) % 9);  // 20-340, the allocator's churn
        const int64_t fault_ns = std::llround(static_cast<double>(s.minflt) * k.fault_cost_s * 1e9);
        s.cpu_ns += fault_ns;
        s.decode_ns += fault_ns;
      }
      t += s.read_ns + s.decode_ns + s.augment_ns;
      EXPECT_TRUE((*writer)->Write(s).ok());
    }
    replay::BatchRecord br;
    br.batch = b;
    br.worker = 0;
    br.size = k.batch_size;
    br.collate_ns = 0;
    br.t_ready_ns = t;
    br.t_next_start_ns = k.next_after_ready ? std::max(loop, t + ms) : loop;
    br.wait_ns = std::max<int64_t>(0, t - br.t_next_start_ns) + std::llround(k.main_ready_wait_s * 1e9);
    br.bytes = k.batch_size * 3 * 64 * 64 * 4;
    EXPECT_TRUE((*writer)->Write(br).ok());
    replay::StepRecord st;
    st.step = b;
    st.t_start_ns = br.t_next_start_ns + br.wait_ns;
    st.compute_ns = st.step_ns = std::llround(k.step_s * 1e9);
    loop = st.t_start_ns + st.step_ns;
    EXPECT_TRUE((*writer)->Write(st).ok());
    if (b == k.shutdown_after_batch) {
      const int64_t end = loop + std::llround(k.shutdown_s * 1e9);
      EXPECT_TRUE((*writer)
                      ->Write(replay::OtherRecord{
                          "event", {{"type", "event"}, {"t_ns", end}, {"kind", "epoch_end"}, {"epoch", 0}}})
                      .ok());
      EXPECT_TRUE(
          (*writer)
              ->Write(replay::OtherRecord{
                  "event",
                  {{"type", "event"}, {"t_ns", end}, {"kind", "epoch_start"}, {"epoch", 1}, {"iter_ns", 5 * ms}}})
              .ok());
      loop = end + 5 * ms;
    }
    (void)batch_start;
  }
  replay::WorkerRecord w;
  w.worker = 0;
  w.pid = 100;
  w.t_ns = ms;
  w.rss_bytes = 200 << 20;
  w.pss_bytes = 90 << 20;
  EXPECT_TRUE((*writer)->Write(w).ok());
  w.worker = -1;
  w.pid = 99;
  w.rss_bytes = 300 << 20;
  EXPECT_TRUE((*writer)->Write(w).ok());
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

Result<CalibrationResult> CalibrateTraces(const std::vector<std::string>& traces, const std::string& model_path,
                                          const std::string& cpu_scale = "intrinsic") {
  CalibrateOptions o;
  o.traces = traces;
  o.model_path = model_path;
  o.cpu_scale = cpu_scale;
  return Calibrate(o);
}

TEST(Calibrate, RecoversKnownParametersFromSyntheticTrace) {
  TempDir dir;
  Known k;
  auto r = CalibrateTraces({WriteSynthetic(dir, k, "syn.jsonl")}, dir.File("model.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& m = r->model;
  // cpu_ns covers read too; decode+augment get their proportional share: exactly k.cpu_share.
  EXPECT_NEAR(m.cpu.worker_cost_scale, k.cpu_share, 1e-3);
  EXPECT_FALSE(m.info.at("cpu.worker_cost_scale").assumed);
  // As captured, the model keeps the capture's slowdown: the scale is the recorded contention's own,
  // min(1, cores / busy loader threads) x the overhead factor.
  auto captured = CalibrateTraces({dir.File("syn.jsonl")}, dir.File("model2.json"), "as-captured");
  ASSERT_TRUE(captured.ok()) << captured.status().message();
  EXPECT_NEAR(captured->model.cpu.worker_cost_scale, captured->captured[0].worker_cost_scale, 1e-12);
  EXPECT_NEAR(m.cpu.worker_cost_scale, r->captured[0].worker_cost_scale, 1e-12);
  EXPECT_NEAR(m.gpu.step_time_s, k.step_s, 1e-9);
  EXPECT_EQ(m.gpu.distribution, "constant");
  EXPECT_EQ(m.gpu.measured_batch_size, k.batch_size);
  EXPECT_NEAR(m.storage.latency_s, k.read_latency_s, 1e-6);
  EXPECT_NEAR(m.storage.bandwidth_bytes_per_s / k.read_bytes_per_s, 1.0, 0.01);
  EXPECT_NEAR(m.cpu.main_per_batch_s, k.main_ready_wait_s, 1e-6);
  EXPECT_NEAR(m.cpu.worker_spawn_s, 0.005, 1e-9);
  EXPECT_NEAR(m.cpu.worker_startup_s, 0.005, 1e-9);
  EXPECT_NEAR(m.memory.worker_base_pss_bytes, 90 << 20, 1);
  EXPECT_NEAR(m.memory.main_base_bytes, 300 << 20, 1);
  EXPECT_TRUE(m.info.at("pcie.h2d_pinned_bytes_per_s").assumed);  // no GPU copy: catalogue
  EXPECT_EQ(m.trace_path, "syn.jsonl");
  // Decode regression: intrinsic decode = share x 40 ns/pixel, intercept ~0.
  const auto& decode = m.extra["formats"]["media"]["jpeg"]["stages"]["decode"];
  EXPECT_NEAR(decode["coefficients_s_per_unit"]["pixels"].template get<double>(), k.cpu_share * k.decode_s_per_pixel,
              1e-10);
  EXPECT_GT(decode["r2"].template get<double>(), 0.999);
  EXPECT_EQ(m.extra["measured_range"]["num_workers"], nlohmann::json({1, 1}));
  EXPECT_EQ(m.extra["measured_range"]["formats"], nlohmann::json({"files"}));
  // The model file round-trips through the simulator's loader with its provenance.
  auto parsed = models::ParseModel(models::ModelToJson(m), "model.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_FALSE(parsed->info.at("gpu.step_time_s").assumed);
  EXPECT_TRUE(parsed->extra.contains("fit_quality"));
}

// A simreplay.probe-cpu/1 document on `cores` cores whose throughput follows c0 = 10 ms per sample,
// slowdown 0.2 and overhead 0.3 exactly (main process idle), and whose thread CPU follows 4 ms with
// slowdown 0.1 and no overhead.
std::string WriteCpuProbe(const TempDir& dir, int cores) {
  nlohmann::json points = nlohmann::json::array();
  for (int k = 1; k <= 2 * cores; ++k) {
    const double f = ContentionFactor(k, cores, 0.2, 0.3);
    points.push_back({{"workers", k},
                      {"wall_s", 2.0},
                      {"throughput_samples_per_s", std::min(k, cores) / (0.010 * f)},
                      {"getitem_cpu_s_mean", 0.004 * ContentionFactor(k, cores, 0.1, 0.0)},
                      {"getitem_wall_s_mean", 0.01},
                      {"main_cpu_s", 0.0}});
  }
  const std::string path = dir.File("probe-cpu.json");
  std::ofstream(path) << nlohmann::json{
      {"schema", "simreplay.probe-cpu/1"},
      {"host", {{"cores", cores}}},
      {"points", points}}.dump();
  return path;
}

// A probe whose points fell into different allocator regimes: its one-worker points took 40 page faults
// per sample and every other 300, and the cost of each point is its faults' cost beside a concurrency
// effect of none at all. Brought to the trace's fault level, the points show that (slowdown and
// overhead near 0) where the points as measured show a large slowdown: the model holds the former and
// reports the latter.
TEST(Calibrate, ProbePointsAreBroughtToTheTracesPageFaultLevel) {
  TempDir dir;
  Known k;
  k.fault_cost_s = 15e-6;
  auto plain = CalibrateTraces({WriteSynthetic(dir, k, "t.jsonl")}, dir.File("m0.json"));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const auto& fit = plain->model.extra["fit_quality"]["cpu"]["page_faults"];
  ASSERT_TRUE(fit["measured"].get<bool>()) << fit.dump(2);
  const double a = fit["no_fault_cpu_s"].get<double>();
  const double b = fit["fault_cost_s"].get<double>();
  EXPECT_NEAR(b, 15e-6, 1.5e-6);
  nlohmann::json points = nlohmann::json::array();
  for (int workers = 1; workers <= 2 * k.cores; ++workers) {
    const double faults = workers == 1 ? 40 : 300;
    const double cost = a + b * faults;  // the same at every concurrency, but for the faults
    points.push_back({{"workers", workers},
                      {"wall_s", 2.0},
                      {"throughput_samples_per_s", std::min(workers, k.cores) / cost},
                      {"getitem_cpu_s_mean", cost},
                      {"getitem_wall_s_mean", cost},
                      {"minflt_per_sample_mean", faults},
                      {"main_cpu_s", 0.0}});
  }
  CalibrateOptions o;
  o.traces = {dir.File("t.jsonl")};
  o.model_path = dir.File("m.json");
  o.cpu_probe_path = dir.File("probe-cpu.json");
  std::ofstream(o.cpu_probe_path) << nlohmann::json{
      {"schema", "simreplay.probe-cpu/1"}, {"host", {{"cores", k.cores}}}, {"points", points}}.dump();
  auto r = Calibrate(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& curve = r->model.extra["fit_quality"]["cpu"]["contention_curve"];
  ASSERT_TRUE(curve["fault_level"]["normalized"].get<bool>()) << curve["fault_level"].dump(2);
  EXPECT_LT(r->model.cpu.busy_core_slowdown, 0.01);
  EXPECT_LT(r->model.cpu.oversubscription_overhead, 0.01);
  EXPECT_LT(curve["thread_cpu_fit"]["slowdown"].get<double>(), 0.01);
  EXPECT_GT(curve["fault_level"]["as_measured_throughput_fit"]["slowdown"].get<double>(), 0.5);
  for (const auto& p : curve["points"]) EXPECT_NEAR(p["error_pct"].get<double>(), 0.0, 0.5) << p.dump();
}

TEST(Calibrate, CpuProbeSetsTheContentionCurve) {
  // One-worker trace (its samples never overlap: concurrency 1) + a probe: the model's slowdown and
  // overhead are the probe's throughput curve (0.2, 0.3), measured, and the fit is reported. The trace's
  // loader got half a core, so other processes' threads ran beside it: the intrinsic scale also loses
  // the shared-core slowdown they caused (the probe's thread-CPU curve at 1 + those threads).
  TempDir dir;
  Known k;
  const std::string trace = WriteSynthetic(dir, k, "t.jsonl");
  auto plain = CalibrateTraces({trace}, dir.File("m0.json"));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->model.cpu.oversubscription_overhead, 0.0);
  EXPECT_TRUE(plain->model.info.at("cpu.oversubscription_overhead").assumed);
  bool said_assumed = false;
  for (const auto& w : plain->warnings) said_assumed |= w.find("CPU contention curve assumed") != std::string::npos;
  EXPECT_TRUE(said_assumed);

  CalibrateOptions o;
  o.traces = {trace};
  o.model_path = dir.File("m.json");
  o.cpu_probe_path = WriteCpuProbe(dir, k.cores);
  auto r = Calibrate(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->model.cpu.busy_core_slowdown, 0.2, 1e-9);
  EXPECT_NEAR(r->model.cpu.oversubscription_overhead, 0.3, 1e-9);
  EXPECT_FALSE(r->model.info.at("cpu.busy_core_slowdown").assumed);
  EXPECT_FALSE(r->model.info.at("cpu.oversubscription_overhead").assumed);
  const double background = r->model.extra["fit_quality"]["cpu"]["contention"][0]["background_threads"];
  ASSERT_GT(background, 0.5);
  const double inflation = ContentionFactor(1 + background, k.cores, 0.1, 0.0);
  EXPECT_NEAR(r->model.cpu.worker_cost_scale, plain->model.cpu.worker_cost_scale / inflation, 1e-12);
  EXPECT_NEAR(r->model.extra["fit_quality"]["cpu"]["contention"][0]["cpu_ns_inflation_with_background"].get<double>(),
              inflation, 1e-12);
  const auto& curve = r->model.extra["fit_quality"]["cpu"]["contention_curve"];
  EXPECT_EQ(curve["source"], "probe");
  EXPECT_FALSE(curve["fault_level"]["normalized"].get<bool>());  // no page faults in this trace or probe
  EXPECT_NEAR(curve["thread_cpu_fit"]["slowdown"].get<double>(), 0.1, 1e-9);
  ASSERT_EQ(curve["points"].size(), 8u);
  for (const auto& p : curve["points"]) EXPECT_NEAR(p["error_pct"].get<double>(), 0.0, 1e-6);
  // The probe measured oversubscription up to its 2 x cores workers; the worker range stays the trace's.
  const auto& range = r->model.extra["measured_range"];
  EXPECT_NEAR(range["max_workers_plus_main_over_cores"].get<double>(), (2.0 * k.cores + 1) / k.cores, 1e-12);
  EXPECT_EQ(range["oversubscription_measured_by"], o.cpu_probe_path);
  EXPECT_EQ(range["num_workers"], plain->model.extra["measured_range"]["num_workers"]);
  EXPECT_LT(plain->model.extra["measured_range"]["max_workers_plus_main_over_cores"].get<double>(),
            range["max_workers_plus_main_over_cores"].get<double>());
}

TEST(Calibrate, BadCpuProbeIsAnErrorNamingTheFile) {
  TempDir dir;
  Known k;
  CalibrateOptions o;
  o.traces = {WriteSynthetic(dir, k, "t.jsonl")};
  o.model_path = dir.File("m.json");
  o.cpu_probe_path = dir.File("bad.json");
  std::ofstream(o.cpu_probe_path) << R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "points": [
    {"workers": 2, "wall_s": 1, "throughput_samples_per_s": 10, "getitem_cpu_s_mean": 0.1,
     "getitem_wall_s_mean": 0.1, "main_cpu_s": 0}]})";
  auto r = Calibrate(o);
  ASSERT_FALSE(r.ok());
  // One concurrency level cannot show a curve.
  EXPECT_NE(r.status().message().find("bad.json"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("2 or more concurrency levels"), std::string::npos);
}

TEST(Calibrate, SelfCheckSimulatesTheCapturedConfiguration) {
  TempDir dir;
  Known k;
  // Loader-bound, so the check exercises the loader model: one worker needs about 4 x (0.085 read +
  // 0.56 decode + 2 augment) ms = 10.6 ms per batch, the loop 2 + 0.5 ms; a step-bound loop would
  // match the measured throughput whatever the loader model said.
  k.step_s = 0.002;
  k.next_after_ready = false;
  // A loader thread alone on 4 cores spends its wall time on the CPU (cpu_ns = wall): with a share of
  // 0.5 the calibrator would rightly read contention and halve the intrinsic cost.
  k.cpu_share = 1.0;
  auto r = CalibrateTraces({WriteSynthetic(dir, k, "syn.jsonl")}, dir.File("model.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  sim::CostCache cache;
  auto check =
      SelfCheck(*r, dir.File(""), [&](const scenarios::Scenario& s) { return sim::SimulateScenario(s, "", &cache); });
  ASSERT_TRUE(check.ok()) << check.status().message();
  ASSERT_EQ((*check)["checked"], 1);
  const auto& row = (*check)["runs"][0];
  EXPECT_GT(row["predicted"]["train_throughput_samples_per_s"].template get<double>(), 0);
  // The simulation must agree within the self-check target, and see the GPU mostly idle (2 ms steps
  // every ~10.6 ms: about 80% idle).
  EXPECT_LT(std::abs(row["error"]["train_throughput_pct"].template get<double>()), 3.0) << row.dump(2);
  EXPECT_GT(row["predicted"]["gpu_idle_fraction"].template get<double>(), 0.6) << row.dump(2);
  EXPECT_NE(FormatSelfCheckTable(*check).find("over 1 trace(s)"), std::string::npos);

  // The check can fail: a loader model twice as slow (the trace's cost scale doubled) cuts the
  // predicted throughput of this loader-bound loop by far more than the target.
  CalibrationResult wrong = *r;
  wrong.captured[0].worker_cost_scale *= 2;
  auto bad = SelfCheck(wrong, dir.File(""),
                       [&](const scenarios::Scenario& s) { return sim::SimulateScenario(s, "", &cache); });
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  EXPECT_LT((*bad)["runs"][0]["error"]["train_throughput_pct"].template get<double>(), -25) << (*bad).dump(2);
  EXPECT_FALSE((*bad)["within_target"].template get<bool>());
}

// The model charges a worker's warm-up excess per start (cpu.worker_warmup_cpu_s), and the replay takes
// each captured lifetime's own excess out of the recorded costs that paid it
// (cpu.recorded_warmup_samples): the scale stays the trace's whole level, in the model and in the
// self-check alike (a scale without the excess as well counted it off twice; one with it and no
// removal counted it twice, once where the captured workers started: self-checks 17-30% too slow on a
// host whose fresh workers fault heavily).
TEST(Calibrate, WarmupExcessIsChargedPerStartAndTakenOutOfTheRecordedLifetimes) {
  TempDir dir;
  const std::string trace = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/trace.jsonl.gz";
  auto r = CalibrateTraces({trace}, dir.File("model.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& warmup = r->model.extra["fit_quality"]["cpu"]["worker_warmup"];
  ASSERT_GT(warmup["primary_share_of_cpu"].get<double>(), 0.05) << warmup.dump(2);  // a measurable warm-up
  ASSERT_GT(r->model.cpu.worker_warmup_cpu_s, 0);
  EXPECT_EQ(r->model.cpu.recorded_warmup_samples, r->model.cpu.worker_warmup_samples);
  ASSERT_EQ(r->captured.size(), 1u);
  // One trace, one repetition: the self-check replays exactly the model's scale, the whole level.
  EXPECT_DOUBLE_EQ(r->captured[0].worker_cost_scale, r->model.cpu.worker_cost_scale);
  EXPECT_DOUBLE_EQ(r->captured[0].worker_cost_scale, r->captured[0].contention.intrinsic_scale);
}

// One worker lifetime is enough to measure the warm-up: a trace of one epoch at one worker (a short
// multi-rank capture's rank 0) left it assumed 0 while its first sample cost 60-90 ms more than the
// steady ones, and every predicted worker start then came for free (the 3-4-rank validation cases'
// epoch restarts, docs/validation-log.md 2026-12-06 night).
TEST(Calibrate, WarmupIsMeasuredFromASingleWorkerLifetime) {
  TempDir dir;
  Known k;
  k.first_sample_extra_cpu_s = 0.060;
  auto r = CalibrateTraces({WriteSynthetic(dir, k, "one-lifetime.jsonl")}, dir.File("model.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& warmup = r->model.extra["fit_quality"]["cpu"]["worker_warmup"];
  EXPECT_EQ(warmup["starts"].get<int>(), 1) << warmup.dump(2);
  // The excess is the first sample's 60 ms (in the model's CPU seconds: x the trace's cost scale), all of
  // it on the first sample.
  EXPECT_NEAR(warmup["first_sample_excess_cpu_s"].get<double>(), 0.060, 0.005) << warmup.dump(2);
  EXPECT_NEAR(r->model.cpu.worker_warmup_cpu_s, 0.060 * r->model.cpu.worker_cost_scale / k.cpu_share, 0.012);
  EXPECT_GT(r->model.cpu.worker_warmup_first_share, 0.8);
  EXPECT_EQ(r->model.cpu.recorded_warmup_samples, r->model.cpu.worker_warmup_samples);
  EXPECT_NE(r->model.info.at("cpu.worker_warmup_cpu_s").source.find("1 worker lifetime(s)"), std::string::npos);

  // Without the excess nothing is charged.
  Known flat;
  auto none = CalibrateTraces({WriteSynthetic(dir, flat, "flat.jsonl")}, dir.File("flat-model.json"));
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_LT(none->model.cpu.worker_warmup_cpu_s, 0.005);
}

TEST(Calibrate, SelfCheckWithEveryTraceSkippedSaysNothingWasChecked) {
  CalibrationResult r;
  CapturedRun run;
  run.trace = "rank0.jsonl";
  run.skip_reason = "multi-rank trace: self-check covers single-rank runs";
  r.captured.push_back(run);
  auto check = SelfCheck(r, ::testing::TempDir(), [](const scenarios::Scenario&) -> Result<nlohmann::json> {
    ADD_FAILURE() << "a skipped trace must not be simulated";
    return Status::Internal("unreachable");
  });
  ASSERT_TRUE(check.ok());
  EXPECT_EQ((*check)["checked"], 0);
  EXPECT_TRUE((*check)["max_abs_train_throughput_error_pct"].is_null());
  EXPECT_FALSE((*check)["within_target"].template get<bool>());
  const std::string table = FormatSelfCheckTable(*check);
  EXPECT_NE(table.find("nothing checked"), std::string::npos) << table;
  EXPECT_EQ(table.find("0.00%"), std::string::npos) << table;
}

TEST(Calibrate, EmptyFileIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir.File("empty.jsonl");
  std::ofstream(path).close();
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
}

TEST(Calibrate, HeaderOnlyTraceHasNothingToCalibrate) {
  TempDir dir;
  const std::string path = dir.File("h.jsonl");
  std::ofstream(path) << R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})"
                      << "\n";
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing to calibrate"), std::string::npos) << r.status().message();
}

TEST(Calibrate, AllZeroTraceIsAnError) {
  TempDir dir;
  const std::string path = dir.File("z.jsonl");
  std::ofstream f(path);
  f << R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})"
    << "\n";
  for (int i = 0; i < 5; ++i) {
    f << R"({"type":"sample","rank":0,"epoch":0,"index":)" << i
      << R"(,"batch":0,"worker":0,"t_start_ns":0,"read_ns":0,"decode_ns":0,"augment_ns":0,"read_bytes":0,"out_bytes":0,"format":"jpeg","width":0,"height":0,"frames":0})"
      << "\n";
  }
  f.close();
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("measured nothing"), std::string::npos) << r.status().message();
}

TEST(Calibrate, NaNIsRejectedWithFileAndLine) {
  TempDir dir;
  const std::string path = dir.File("nan.jsonl");
  std::ofstream(path)
      << R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})"
      << "\n"
      << R"({"type":"step","rank":0,"step":0,"t_start_ns":0,"compute_ns":NaN,"comm_ns":0,"step_ns":5,"micro_batches":1})"
      << "\n";
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path + ":2"), std::string::npos) << r.status().message();
}

TEST(Calibrate, ContradictoryWorkerIdIsAnErrorWithLine) {
  TempDir dir;
  const std::string path = dir.File("c.jsonl");
  std::ofstream(path)
      << R"({"type":"header","schema":"simreplay.trace/1","manifest":{"loader":{"num_workers":2,"batch_size":4}}})"
      << "\n"
      << R"({"type":"sample","rank":0,"epoch":0,"index":1,"batch":0,"worker":5,"t_start_ns":0,"read_ns":10,"decode_ns":1000,"augment_ns":0,"read_bytes":10,"out_bytes":10,"format":"jpeg","width":1,"height":1,"frames":1})"
      << "\n";
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path + ":2: contradictory"), std::string::npos) << r.status().message();
}

TEST(Calibrate, CpuTimeAboveWallTimeIsContradictory) {
  TempDir dir;
  const std::string path = dir.File("c.jsonl");
  std::ofstream(path)
      << R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})"
      << "\n"
      << R"({"type":"sample","rank":0,"epoch":0,"index":1,"batch":0,"worker":0,"t_start_ns":0,"read_ns":0,"decode_ns":1000000,"augment_ns":0,"read_bytes":10,"out_bytes":10,"format":"jpeg","width":1,"height":1,"frames":1,"cpu_ns":90000000})"
      << "\n";
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cpu_ns"), std::string::npos) << r.status().message();
}

// Regression (the held-out video set in the clean-clone CI run of 2026-12-02): a call whose CPU time
// exceeded its stages' sum but not its own wall time (the content hash and a pause lie outside the
// stages) was called contradictory and failed calibration. The record's wall_ns is the call's wall.
TEST(Calibrate, RegressionCpuTimeWithinTheCallsWallTimeIsNotContradictory) {
  TempDir dir;
  const std::string path = dir.File("c.jsonl");
  auto sample = [](int64_t wall_ns, int64_t cpu_ns) {
    return R"({"type":"sample","rank":0,"epoch":0,"index":1,"batch":0,"worker":0,"t_start_ns":0,"read_ns":90696,)"
           R"("decode_ns":820842,"augment_ns":786441,"read_bytes":10,"out_bytes":10,"format":"jpeg","width":1,)"
           R"("height":1,"frames":1,"wall_ns":)" +
           std::to_string(wall_ns) + R"(,"cpu_ns":)" + std::to_string(cpu_ns) + "}\n";
  };
  const std::string header = R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})"
                             "\n";
  std::ofstream(path) << header << sample(3644199, 3648696);  // the CI run's record
  auto r = CalibrateTraces({path}, dir.File("m.json"));
  EXPECT_FALSE(!r.ok() && r.status().message().find("cpu_ns") != std::string::npos) << r.status().message();
  // CPU time far beyond the call's own wall time is still a contradiction.
  std::ofstream(path) << header << sample(3644199, 90000000);
  r = CalibrateTraces({path}, dir.File("m2.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cpu_ns"), std::string::npos) << r.status().message();
}

// Regression (a what-if base capture at 15-29% steal, 2026-12-08): one sample in 2,160 recorded 5.07 ms of
// thread CPU in a 2.60 ms call, and calibrate refused the whole capture. A stray one is clamped to its
// wall time with a warning naming its line; a trace where more than 1% of the samples do it is refused.
TEST(Calibrate, RegressionAStrayCpuTimeAboveWallIsClampedAndWarned) {
  TempDir dir;
  auto trace = [](int samples, int impossible) {
    std::string out = R"({"type":"header","schema":"simreplay.trace/1","manifest":{}})"
                      "\n";
    for (int i = 0; i < samples; ++i) {
      const int64_t cpu_ns = i < impossible ? 5069845 : 2400000;
      out += R"({"type":"sample","rank":0,"epoch":0,"index":)" + std::to_string(i) +
             R"(,"batch":0,"worker":0,"t_start_ns":0,"read_ns":100000,"decode_ns":1200000,"augment_ns":1200000,)"
             R"("read_bytes":10,"out_bytes":10,"format":"jpeg","width":1,"height":1,"frames":1,"wall_ns":2595127,)"
             R"("cpu_ns":)" + std::to_string(cpu_ns) + "}\n";
    }
    return out;
  };
  const std::string one = dir.File("one.jsonl");
  std::ofstream(one) << trace(200, 1);
  auto r = CalibrateTraces({one}, dir.File("m.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool warned = false;
  for (const auto& w : r->warnings) warned |= w.find(one + ":2: 1 of 200 samples") != std::string::npos;
  EXPECT_TRUE(warned);
  const std::string many = dir.File("many.jsonl");
  std::ofstream(many) << trace(200, 3);
  r = CalibrateTraces({many}, dir.File("m2.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(many + ":2: contradictory fields: cpu_ns 5069845"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("3 of 200 samples"), std::string::npos) << r.status().message();
}

TEST(Calibrate, OneSampleCalibratesWithLowConfidenceFlags) {
  TempDir dir;
  Known k;
  k.batches = 1;
  k.batch_size = 1;
  auto r = CalibrateTraces({WriteSynthetic(dir, k, "one.jsonl")}, dir.File("m.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool flagged = false;
  for (const auto& w : r->warnings) flagged |= w.find("low confidence") != std::string::npos;
  EXPECT_TRUE(flagged);
  EXPECT_TRUE(r->model.extra["fit_quality"]["cost_regression"]["jpeg.decode"]["low_confidence"].get<bool>());
  // Too few ready batches for main_per_batch_s: the default stays and is marked assumed.
  EXPECT_EQ(r->model.info.count("cpu.main_per_batch_s"), 0u);
}

TEST(Calibrate, TwoTracesAtDifferentBatchSizesFitTheStepScaling) {
  TempDir dir;
  Known a, b;
  b.batch_size = 8;
  b.step_s = 0.036;  // 4 ms + 4 ms per sample at 4 -> 20 ms, at 8 -> 36 ms
  auto r = CalibrateTraces({WriteSynthetic(dir, a, "a.jsonl"), WriteSynthetic(dir, b, "b.jsonl")}, dir.File("m.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& fit = r->model.extra["fit_quality"]["gpu"]["batch_size_fit"];
  EXPECT_NEAR(fit["coefficients_s_per_unit"]["intercept"].template get<double>(), 0.004, 1e-6);
  EXPECT_NEAR(fit["coefficients_s_per_unit"]["batch_size"].template get<double>(), 0.004, 1e-7);
  EXPECT_EQ(r->model.extra["measured_range"]["batch_size"], nlohmann::json({4, 8}));
  // The simulator uses the fit instead of proportional scaling.
  EXPECT_NEAR(r->model.gpu.step_intercept_s, 0.004, 1e-6);
  EXPECT_NEAR(r->model.gpu.step_per_sample_s, 0.004, 1e-7);
}

// Repetitions of one configuration: the primary's samples replay at the mean cost level of all of
// them. Second repetition 1.5x as expensive: level (1 + 1.5) / 2 = 1.25 x the primary's.
TEST(Calibrate, RepetitionsOfOneConfigurationPoolTheCostLevel) {
  TempDir dir;
  Known k;
  const std::string a = WriteSynthetic(dir, k, "a.jsonl");
  Known slow = k;
  slow.cost_factor = 1.5;
  const std::string b = WriteSynthetic(dir, slow, "b.jsonl");
  auto one = CalibrateTraces({a}, dir.File("one.json"));
  auto both = CalibrateTraces({a, b}, dir.File("both.json"));
  ASSERT_TRUE(one.ok() && both.ok());
  EXPECT_NEAR(both->model.cpu.worker_cost_scale / one->model.cpu.worker_cost_scale, 1.25, 1e-3);
  EXPECT_NEAR(both->model.extra["fit_quality"]["cpu"]["repetitions"]["worker_cost_scale_factor"].get<double>(), 1.25,
              1e-3);
  EXPECT_EQ(both->model.trace_path, "a.jsonl");  // the primary still replays
  // Another batch size is not a repetition: nothing pooled.
  Known other = slow;
  other.batch_size = 8;
  const std::string c = WriteSynthetic(dir, other, "c.jsonl");
  auto mixed = CalibrateTraces({a, c}, dir.File("mixed.json"));
  ASSERT_TRUE(mixed.ok());
  EXPECT_NEAR(mixed->model.cpu.worker_cost_scale, one->model.cpu.worker_cost_scale, 1e-12);
  EXPECT_FALSE(mixed->model.extra["fit_quality"]["cpu"].contains("repetitions"));
}

// A non-persistent epoch that ends inside next(): the join of its workers, per worker.
TEST(Calibrate, WorkerShutdownFromEpochEnds) {
  TempDir dir;
  Known k;
  k.shutdown_after_batch = 10;
  k.shutdown_s = 0.03;
  auto r = CalibrateTraces({WriteSynthetic(dir, k, "s.jsonl")}, dir.File("s.json"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->model.cpu.worker_shutdown_s, 0.03 / k.workers, 1e-9);
  EXPECT_FALSE(r->model.info.at("cpu.worker_shutdown_s").assumed);
  auto none = CalibrateTraces({WriteSynthetic(dir, Known{}, "n.jsonl")}, dir.File("n.json"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->model.cpu.worker_shutdown_s, 0);
  EXPECT_TRUE(none->model.info.at("cpu.worker_shutdown_s").assumed);
}

}  // namespace
}  // namespace simreplay::calibrate
