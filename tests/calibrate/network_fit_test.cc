#include "calibrate/network_fit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "replay/trace_writer.h"

namespace simreplay::calibrate {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/netfit_" + name;
  std::ofstream(path) << text;
  return path;
}

// t = 2 ms + S / 100 MB/s at sizes 1 KiB .. 16 MiB (x16).
nlohmann::json ProbeDoc(int world_size) {
  nlohmann::json results = nlohmann::json::array();
  for (double s : {1024.0, 16384.0, 262144.0, 4194304.0, 16777216.0})
    results.push_back({{"op", "all_reduce"}, {"bytes", s}, {"time_s", 2e-3 + s / 1e8}});
  return {{"schema", "simreplay.probe-network/1"},
          {"backend", "gloo"},
          {"world_size", world_size},
          {"nodes", world_size},
          {"results", results}};
}

TEST(NetworkFit, FitAlphaBetaRecoversAnExactLine) {
  std::vector<std::pair<double, double>> pts;
  for (double s : {1e3, 1e5, 1e7}) pts.emplace_back(s, 1e-4 + s / 1e9);
  auto f = FitAlphaBeta(pts);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f->alpha_s, 1e-4, 1e-12);
  EXPECT_NEAR(f->algbw_bytes_per_s, 1e9, 1e-3);
  EXPECT_NEAR(f->r2, 1.0, 1e-9);
  EXPECT_NEAR(f->mape, 0.0, 1e-9);
}

TEST(NetworkFit, SmallMessageScatterDoesNotSetTheBandwidth) {
  // The all-reduce probe measured between two namespaces over a 1 Gbit/s link (2026-12-01): 1.5-3.3 ms
  // of scheduling noise below 256 KiB, then 119.5 MB/s. One weighted line through every point put
  // algbw at 177.6 MB/s, above the link; the bandwidth-bound points (>= 10x the fastest) give the link.
  const std::vector<std::pair<double, double>> probe = {
      {1024, 1.5138e-3},    {4096, 1.8502e-3},    {16384, 2.0424e-3},   {65536, 3.3388e-3},     {262144, 1.5329e-3},
      {1048576, 8.5261e-3}, {4194304, 35.093e-3}, {16777216, 140.05e-3}, {67108864, 561.49e-3}};
  auto f = FitAlphaBeta(probe);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f->algbw_bytes_per_s, 119.5e6, 0.5e6);
  EXPECT_GT(f->alpha_s, 0.5e-3);
  EXPECT_LT(f->alpha_s, 3e-3);
  EXPECT_NE(f->method.find("two-regime"), std::string::npos);
}

TEST(NetworkFit, ProbeCpuReadingsSetTheCollectivesHostCpuWork) {
  // Host CPU per rank = 1 ms + 2 ns per bus byte; at 2 ranks the bus bytes are S. Points of the
  // latency regime (below 10x the fastest time) stay out of the slope.
  nlohmann::json doc = ProbeDoc(2);
  for (auto& r : doc["results"]) r["host_cpu_s_per_rank"] = 1e-3 + 2e-9 * r["bytes"].get<double>();
  doc["results"][0]["host_cpu_s_per_rank"] = 0.5;  // a latency-bound point far off the line
  auto probe = LoadNetworkProbe(Write("pcpu.json", doc.dump()));
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  NetworkFitResult fit = FitNetwork(&*probe, nullptr, models::CollectiveParams{});
  EXPECT_NEAR(fit.collective.cpu_s_per_bus_byte, 2e-9, 1e-13);
  EXPECT_FALSE(fit.info.at("collective.cpu_s_per_bus_byte").assumed);
  EXPECT_NEAR(fit.fit_quality["probe"]["cpu"]["intercept_s"].get<double>(), 1e-3, 1e-6);
  // At 4 ranks the bus bytes are 1.5 S: the same readings mean 2/1.5 ns per bus byte.
  doc["world_size"] = 4;
  probe = LoadNetworkProbe(Write("pcpu4.json", doc.dump()));
  ASSERT_TRUE(probe.ok());
  EXPECT_NEAR(FitNetwork(&*probe, nullptr, {}).collective.cpu_s_per_bus_byte, 2e-9 / 1.5, 1e-13);
  // Without CPU readings (an older probe) the term stays 0 and a warning says so.
  probe = LoadNetworkProbe(Write("pnocpu.json", ProbeDoc(2).dump()));
  fit = FitNetwork(&*probe, nullptr, {});
  EXPECT_EQ(fit.collective.cpu_s_per_bus_byte, 0);
  ASSERT_FALSE(fit.warnings.empty());
  EXPECT_NE(fit.warnings.back().find("no CPU readings"), std::string::npos);
  // A negative reading is a FILE error, like every other field.
  doc["results"][2]["host_cpu_s_per_rank"] = -1;
  EXPECT_FALSE(LoadNetworkProbe(Write("pcpubad.json", doc.dump())).ok());
}

TEST(NetworkFit, FitAlphaBetaNeedsTwoSizes) { EXPECT_FALSE(FitAlphaBeta({{1024, 1e-3}, {1024, 2e-3}}).ok()); }

TEST(NetworkFit, ProbeSetsRingParametersThatReproduceTheFitAtItsWorldSize) {
  auto probe = LoadNetworkProbe(Write("p2.json", ProbeDoc(2).dump()));
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  NetworkFitResult fit = FitNetwork(&*probe, nullptr, models::CollectiveParams{});
  // n = 2: alpha_s = 2 ms / (2(2-1)) = 1 ms; busbw = algbw x 2(1)/2 = 100 MB/s.
  EXPECT_NEAR(fit.collective.alpha_s, 1e-3, 1e-9);
  EXPECT_NEAR(fit.collective.bus_bytes_per_s, 1e8, 1.0);
  EXPECT_EQ(fit.collective.time_per_step_s, 0);
  EXPECT_FALSE(fit.info.at("collective.alpha_s").assumed);
  // The ring at n = 2 for 16 MB: 2 x 1 ms + 1 x 16e6 / 1e8 = 0.162 s = the probe's own line.
  models::ModelParams m;
  m.collective = fit.collective;
  m.collective.gradient_bytes = 16e6;
  EXPECT_NEAR(m.CollectiveTimeS(2), 2e-3 + 16e6 / 1e8, 1e-9);
  // n = 4: 6 x 1 ms + 1.5 x 0.16 s = 0.246 s.
  EXPECT_NEAR(m.CollectiveTimeS(4), 6e-3 + 1.5 * 16e6 / 1e8, 1e-9);
}

// The probe's links for cluster scenarios: the ring's busbw is one NIC's achieved rate, a ring step
// crosses two NICs, and the nominal rate is rank 0's tc rate.
TEST(NetworkFit, ProbeRecordsTheAchievedLinksAndTheirNominalRate) {
  nlohmann::json doc = ProbeDoc(2);
  doc["ranks"] = {{{"rank", 0}, {"interface", {{"name", "eth0"}, {"tc_rate_bits_per_s", 1e9}}}}};
  auto probe = LoadNetworkProbe(Write("p2links.json", doc.dump()));
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  NetworkFitResult fit = FitNetwork(&*probe, nullptr, models::CollectiveParams{});
  EXPECT_NEAR(fit.network.link_bytes_per_s, 1e8, 1.0);
  EXPECT_NEAR(fit.network.link_latency_s, 0.5e-3, 1e-12);
  EXPECT_NEAR(fit.network.nominal_link_bytes_per_s, 1.25e8, 1e-3);
  EXPECT_EQ(fit.network.ranks, 2);
  EXPECT_EQ(fit.network.nodes, 2);
  models::ModelParams model;
  ApplyNetworkFit(fit, &model);
  EXPECT_TRUE(model.network.probed());
  EXPECT_FALSE(model.info.at("network.link_bytes_per_s").assumed);
  // It round-trips through the model file.
  auto back = models::ParseModel(models::ModelToJson(model), "model.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_NEAR(back->network.link_bytes_per_s, 1e8, 1.0);
  EXPECT_NEAR(back->network.link_latency_s, 0.5e-3, 1e-12);
  // Without a probe nothing is recorded.
  EXPECT_FALSE(FitNetwork(nullptr, nullptr, models::CollectiveParams{}).network.probed());
}

TEST(NetworkFit, ProbeAtFourRanksDividesByTheRing) {
  auto probe = LoadNetworkProbe(Write("p4.json", ProbeDoc(4).dump()));
  ASSERT_TRUE(probe.ok());
  NetworkFitResult fit = FitNetwork(&*probe, nullptr, models::CollectiveParams{});
  // n = 4: alpha_s = 2 ms / 6; busbw = 1e8 x 2 x 3 / 4 = 1.5e8.
  EXPECT_NEAR(fit.collective.alpha_s, 2e-3 / 6, 1e-9);
  EXPECT_NEAR(fit.collective.bus_bytes_per_s, 1.5e8, 1.0);
}

TEST(NetworkFit, RejectsBadProbes) {
  auto wrong = LoadNetworkProbe(Write("w.json", R"({"schema":"simreplay.probe-network/2"})"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("wrong schema version"), std::string::npos);
  auto malformed = LoadNetworkProbe(Write("m.json", "{\n\"schema\": \n}"));
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("m.json:3: "), std::string::npos)
      << malformed.status().message();
  nlohmann::json neg = ProbeDoc(2);
  neg["results"][1]["time_s"] = -1;
  auto negative = LoadNetworkProbe(Write("n.json", neg.dump()));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("results[1]: expected 'time_s' > 0"), std::string::npos)
      << negative.status().message();
  EXPECT_EQ(LoadNetworkProbe(::testing::TempDir() + "/absent.json").status().code(), Status::Code::kNotFound);
}

// Found by the network_probe fuzz target on its first run (2026-12-01): "all_reduce": -1e400 aborted
// calibrate (nlohmann's out_of_range escaped); non-string "backend" or "schema", a non-object
// ranks[0] and a world size past INT_MAX were the same kind of landmine.
TEST(NetworkFit, RegressionOverflowAndWrongTypesAreFileLineErrors) {
  auto overflow = LoadNetworkProbe(Write("o.json", "{\"schema\": \"simreplay.probe-network/1\",\n \"x\": -1e400}"));
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("o.json:2:"), std::string::npos) << overflow.status().message();
  nlohmann::json doc = ProbeDoc(2);
  doc["schema"] = 7;
  EXPECT_FALSE(LoadNetworkProbe(Write("s.json", doc.dump())).ok());
  doc = ProbeDoc(2);
  doc["backend"] = 3;
  doc["ranks"] = {1};
  EXPECT_TRUE(LoadNetworkProbe(Write("b.json", doc.dump())).ok());  // optional fields of the wrong type: ignored
  doc = ProbeDoc(2);
  doc["world_size"] = 4294967297.0;
  auto huge = LoadNetworkProbe(Write("h.json", doc.dump()));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("whole number up to 1e6"), std::string::npos) << huge.status().message();
}

TEST(NetworkFit, TracesGiveGradientBytesAndAFitWithoutProbe) {
  // Rank 0, world size 2, three steps each with two DDP buckets: 1 MB (12 ms) and 3 MB (32 ms):
  // t = 2 ms + S / 100 MB/s exactly. gradient bytes per step = 4 MB; exposed comm per step 44 ms.
  replay::TraceHeader h;
  h.manifest = {{"rank", 0}, {"world_size", 2}};
  std::string path = ::testing::TempDir() + "/netfit_trace.jsonl";
  auto w = replay::TraceWriter::Create(path, h);
  ASSERT_TRUE(w.ok());
  for (int s = 0; s < 3; ++s) {
    replay::StepRecord st;
    st.step = s;
    st.comm_ns = 44'000'000;
    st.step_ns = 100'000'000;
    ASSERT_TRUE((*w)->Write(st).ok());
    for (auto [bytes, ns] : {std::pair{1e6, 12'000'000}, std::pair{3e6, 32'000'000}}) {
      nlohmann::json c = {{"rank", 0},       {"step", s},         {"op", "all_reduce"}, {"bytes", bytes},
                          {"t_start_ns", 0}, {"duration_ns", ns}, {"world_size", 2}};
      ASSERT_TRUE((*w)->Write(replay::OtherRecord{"collective", c}).ok());
    }
  }
  ASSERT_TRUE((*w)->Close().ok());
  auto tc = ReadTraceCollectives({path});
  ASSERT_TRUE(tc.ok()) << tc.status().message();
  EXPECT_EQ(tc->steps_with_collectives, 3);
  EXPECT_DOUBLE_EQ(tc->gradient_bytes_per_step, 4e6);
  EXPECT_DOUBLE_EQ(tc->exposed_comm_s_median, 0.044);
  NetworkFitResult fit = FitNetwork(nullptr, &*tc, models::CollectiveParams{});
  EXPECT_NEAR(fit.collective.alpha_s, 1e-3, 1e-9);  // 2 ms / 2(2-1)
  EXPECT_NEAR(fit.collective.bus_bytes_per_s, 1e8, 1e-2);
  EXPECT_DOUBLE_EQ(fit.collective.gradient_bytes, 4e6);
  // check: one all-reduce of 4 MB = 2 ms + 40 ms = 42 ms vs 44 ms measured (two buckets pay alpha twice)
  EXPECT_NEAR(fit.fit_quality["traces"]["check"]["predicted_s"].get<double>(), 0.042, 1e-9);
}

}  // namespace
}  // namespace simreplay::calibrate
