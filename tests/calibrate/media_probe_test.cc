#include "calibrate/media_probe.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "models/media_synth.h"

namespace simreplay::calibrate {
namespace {

class MediaProbeDir {
 public:
  MediaProbeDir() {
    std::string pattern = ::testing::TempDir() + "media_probe_test.XXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~MediaProbeDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

// Probe points of a JPEG pipeline whose decode costs 2 ms + 10 ns per pixel and whose augment costs a
// flat 1 ms, at 0.5x, 1x and 2x of three images (the probe runs alone: level 1).
MediaProbe SyntheticProbe() {
  MediaProbe p;
  p.file = "probe-media.json";
  for (double base : {200.0, 300.0, 400.0}) {
    for (double scale : {0.5, 1.0, 2.0}) {
      MediaProbePoint pt;
      pt.media = "jpeg";
      pt.scale = scale;
      pt.pixels = (base * scale) * (base * scale * 0.75);
      pt.decode_s = 0.002 + 1e-8 * pt.pixels;
      pt.augment_s = 0.001;
      p.points.push_back(pt);
    }
  }
  return p;
}

nlohmann::json TraceFit() {
  // What the costs stage wrote from a trace that saw only the 1x images: a pure per-pixel slope.
  return {{"jpeg",
           {{"stages",
             {{"decode",
               {{"coefficients_s_per_unit", {{"intercept", 0.0}, {"bytes", 0.0}, {"pixels", 2.4e-8}, {"frames", 0.0}}},
                {"range", {{"bytes", {1e4, 4e4}}, {"pixels", {3e4, 1.2e5}}, {"frames", {1, 1}}}}}},
              {"augment",
               {{"coefficients_s_per_unit", {{"intercept", 0.0015}}},
                {"range", {{"bytes", {1e4, 4e4}}, {"pixels", {3e4, 1.2e5}}, {"frames", {1, 1}}}}}}}}}}};
}

TEST(MediaProbe, FixedAndPerPixelPartsAtTheTracesLevel) {
  // The trace ran under contention: every observed cost is 1.5x the probe's.
  std::vector<MediaTraceRow> rows;
  for (double base : {200.0, 300.0, 400.0}) {
    MediaTraceRow r;
    r.media = "jpeg";
    r.pixels = base * base * 0.75;
    r.decode_s = 1.5 * (0.002 + 1e-8 * r.pixels);
    r.augment_s = 1.5 * 0.001;
    rows.push_back(r);
  }
  nlohmann::json media = TraceFit(), quality;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMediaProbe(SyntheticProbe(), rows, &media, &quality, &warnings).ok());
  const auto& decode = media["jpeg"]["stages"]["decode"];
  EXPECT_EQ(decode["method"], "media_probe_huber_anchored");
  EXPECT_NEAR(decode["coefficients_s_per_unit"]["intercept"].get<double>(), 0.003, 1e-9);
  EXPECT_NEAR(decode["coefficients_s_per_unit"]["pixels"].get<double>(), 1.5e-8, 1e-14);
  EXPECT_NEAR(decode["trace_anchor"]["level"].get<double>(), 1.5, 1e-9);
  // The range is the probe's: 0.5x of the smallest to 2x of the largest image.
  EXPECT_NEAR(decode["range"]["pixels"][0].get<double>(), 100 * 75, 1e-6);
  EXPECT_NEAR(decode["range"]["pixels"][1].get<double>(), 800 * 600, 1e-6);
  EXPECT_NEAR(media["jpeg"]["stages"]["augment"]["coefficients_s_per_unit"]["intercept"].get<double>(), 0.0015, 1e-12);
  EXPECT_TRUE(quality.contains("jpeg/decode"));

  // What it changes: images at 2x the side of a 400 x 300 one cost (3 ms + 1.5e-8 x 480000) / (3 ms +
  // 1.5e-8 x 120000) = 10.2 / 4.8 = 2.125x the recorded decode with the probe's fit; the trace's pure
  // per-pixel slope said 4x.
  auto models = models::ParseMediaCostModels(media, "m");
  ASSERT_TRUE(models.ok()) << models.status().message();
  const double px = 400 * 300;
  const auto& fit = (*models)["jpeg"].decode;
  EXPECT_NEAR(models::PredictStageS(fit, 0, 4 * px, 1, false) / models::PredictStageS(fit, 0, px, 1, false), 2.125, 1e-9);
}

TEST(MediaProbe, TooFewScalesKeepsTheTracesFit) {
  MediaProbe p = SyntheticProbe();
  std::erase_if(p.points, [](const MediaProbePoint& pt) { return pt.scale != 1.0; });
  nlohmann::json media = TraceFit(), quality;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMediaProbe(p, {}, &media, &quality, &warnings).ok());
  EXPECT_EQ(media, TraceFit());
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("1 scale(s)"), std::string::npos) << warnings[0];
}

TEST(MediaProbe, ReadsTheDocumentAndRejectsBadInput) {
  MediaProbeDir dir;
  auto good = ReadMediaProbeFile(dir.Write(
      "ok.json", R"({"schema": "simreplay.probe-media/1", "points": [{"media": "mp4", "width": 320, "height": 240,
      "frames": 8, "scale": 1, "frames_scale": 2, "decode_s": 0.03, "augment_s": 0.01, "read_bytes": 50000,
      "split": true}]})"));
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->points[0].pixels, 320.0 * 240 * 8);
  EXPECT_EQ(good->points[0].frames_scale, 2);
  auto schema = ReadMediaProbeFile(dir.Write("schema.json", R"({"schema": "simreplay.probe-cpu/1", "points": []})"));
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.status().message().find("schema.json: schema: expected \"simreplay.probe-media/1\""),
            std::string::npos)
      << schema.status().message();
  auto negative = ReadMediaProbeFile(dir.Write(
      "neg.json", R"({"schema": "simreplay.probe-media/1", "points": [{"media": "jpeg", "width": 3, "height": 3,
      "decode_s": -1}]})"));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("points[0]"), std::string::npos) << negative.status().message();
  auto truncated = ReadMediaProbeFile(dir.Write("cut.json", R"({"schema": "simreplay.probe-media/1", "points": [)"));
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("cut.json"), std::string::npos);
  auto empty = ReadMediaProbeFile(dir.Write("empty.json", R"({"schema": "simreplay.probe-media/1", "points": []})"));
  ASSERT_FALSE(empty.ok());
}

}  // namespace
}  // namespace simreplay::calibrate
