#include "models/model_params.h"

#include <gtest/gtest.h>

#include <fstream>

namespace simreplay::models {
namespace {

TEST(ModelParams, ReadsBareNumbersAndProvenanceObjects) {
  auto j = nlohmann::json::parse(R"({"schema":"simreplay.model/1",
    "cpu":{"main_per_batch_s":0.001,"pin_bytes_per_s":{"value":3e9,"assumed":false,"source":"trace.jsonl"}},
    "storage":{"mode":"model","max_concurrency":4}})");
  auto m = ParseModel(j, "m.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_DOUBLE_EQ(m->cpu.main_per_batch_s, 0.001);
  EXPECT_DOUBLE_EQ(m->cpu.pin_bytes_per_s, 3e9);
  EXPECT_FALSE(m->info["cpu.pin_bytes_per_s"].assumed);
  EXPECT_EQ(m->info["cpu.pin_bytes_per_s"].source, "trace.jsonl");
  EXPECT_TRUE(m->info["cpu.main_per_batch_s"].assumed);
  EXPECT_EQ(m->storage.max_concurrency, 4);
  EXPECT_DOUBLE_EQ(m->gpu.step_time_s, GpuParams{}.step_time_s);  // untouched default
}

TEST(ModelParams, RejectsWrongSchemaAndBadValues) {
  auto wrong = ParseModel(nlohmann::json::parse(R"({"schema":"simreplay.model/0"})"), "m.json");
  EXPECT_NE(wrong.status().message().find("m.json: wrong schema version"), std::string::npos);
  auto zero =
      ParseModel(nlohmann::json::parse(R"({"schema":"simreplay.model/1","cpu":{"pin_bytes_per_s":0}})"), "m.json");
  EXPECT_NE(zero.status().message().find("cpu.pin_bytes_per_s must be > 0"), std::string::npos)
      << zero.status().message();
  auto neg = ParseModel(nlohmann::json::parse(R"({"schema":"simreplay.model/1","gpu":{"step_time_s":-1}})"), "m.json");
  EXPECT_NE(neg.status().message().find("'step_time_s' must be >= 0"), std::string::npos) << neg.status().message();
  auto overhead = ParseModel(
      nlohmann::json::parse(R"({"schema":"simreplay.model/1","cpu":{"worker_overhead_per_sample_s":-0.001}})"),
      "m.json");
  EXPECT_NE(overhead.status().message().find("m.json: cpu: field 'worker_overhead_per_sample_s' must be >= 0"), std::string::npos)
      << overhead.status().message();
  auto mode =
      ParseModel(nlohmann::json::parse(R"({"schema":"simreplay.model/1","storage":{"mode":"fast"}})"), "m.json");
  EXPECT_NE(mode.status().message().find("mode must be"), std::string::npos);
  auto first = ParseModel(
      nlohmann::json::parse(R"({"schema":"simreplay.model/1","cpu":{"worker_warmup_first_share":1.5}})"), "m.json");
  EXPECT_NE(first.status().message().find("cpu.worker_warmup_first_share must be in [0, 1]"), std::string::npos)
      << first.status().message();
  auto steady = ParseModel(
      nlohmann::json::parse(R"({"schema":"simreplay.model/1","warmup_steady_cpu_s_per_unit":{"jpeg":"x"}})"), "m.json");
  EXPECT_NE(steady.status().message().find("m.json: warmup_steady_cpu_s_per_unit.jpeg must be a number >= 0"),
            std::string::npos)
      << steady.status().message();
  auto churn =
      ParseModel(nlohmann::json::parse(R"({"schema":"simreplay.model/1","cpu":{"page_fault_cpu_share":0.99}})"), "m.json");
  EXPECT_NE(churn.status().message().find("m.json: cpu.page_fault_cpu_share must be in [0, 0.95]"), std::string::npos)
      << churn.status().message();
  auto ratio = ParseModel(
      nlohmann::json::parse(R"({"schema":"simreplay.model/1","cpu":{"inline_page_fault_ratio":1e300}})"), "m.json");
  EXPECT_NE(ratio.status().message().find("m.json: cpu.inline_page_fault_ratio must be in [0, 100]"), std::string::npos)
      << ratio.status().message();
}

TEST(ModelParams, JsonRoundTrip) {
  ModelParams m;
  m.cpu.worker_cost_scale = 0.8;
  m.info["cpu.worker_cost_scale"] = {false, "calibrated"};
  m.warmup_steady_cpu_s_per_unit = {{"jpeg", 2.5e-8}, {"mp4", 3e-8}};
  auto back = ParseModel(ModelToJson(m), "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->cpu.worker_cost_scale, 0.8);
  EXPECT_EQ(back->warmup_steady_cpu_s_per_unit, m.warmup_steady_cpu_s_per_unit);
  EXPECT_FALSE(back->info["cpu.worker_cost_scale"].assumed);
}

TEST(ModelParams, RingAllReduceTime) {
  // 2(N-1) alpha + 2(N-1)/N x S / B for N = 4, S = 1 GB, B = 100 GB/s, alpha = 20 us.
  ModelParams m;
  m.collective.gradient_bytes = 1e9;
  EXPECT_NEAR(m.CollectiveTimeS(4), 6 * 20e-6 + 1.5 * 1e9 / 100e9, 1e-12);
  EXPECT_EQ(m.CollectiveTimeS(1), 0.0);
}

// Regression (issue 13, found by fuzz/model_fuzzer): "-1e400" in a model file made nlohmann throw
// out_of_range 406, which escaped the loader's parse_error handler and aborted the process.
TEST(ModelParams, RegressionNumberOverflowIsFileLineError) {
  std::string path = ::testing::TempDir() + "/overflow_model.json";
  std::ofstream(path) << "{\"schema\":\"simreplay.model/1\",\n\"cpu\":{\"pin_bytes_per_s\":{\"value\":-1e400}}}\n";
  auto model = LoadModelFile(path);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(), path + ":2: a number out of range: -1e400 does not fit a 64-bit float");
}

}  // namespace
}  // namespace simreplay::models
