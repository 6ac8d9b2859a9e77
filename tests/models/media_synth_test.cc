#include "models/media_synth.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace simreplay::models {
namespace {

// decode = 1 ms + 10 ns/pixel, measured over 1e5..2e5 pixels and 1..1 frames; read = 0.1 ms + 1 ns/byte;
// augment: intercept only (0.5 ms at the one measured size, 1e5 pixels). Residual ratios all 1.
MediaCostModel Jpeg() {
  MediaCostModel m;
  m.read = {true, 1e-4, 1e-9, 0, 0, false, 1e4, 1e5, 0, 0, 0, 0, std::vector<double>(21, 1.0), {}};
  m.decode = {true, 1e-3, 0, 1e-8, 0, false, 1e4, 1e5, 1e5, 2e5, 1, 1, std::vector<double>(21, 1.0), {}};
  m.augment = {true, 5e-4, 0, 0, 0, true, 5e4, 5e4, 1e5, 1e5, 1, 1, std::vector<double>(21, 1.0), {}};
  m.bytes_per_pixel = 0.5;
  return m;
}

MediaCostModel Mp4() {
  MediaCostModel m;
  m.read = {true, 2e-4, 0, 0, 0, true, 4e4, 4e4, 0, 0, 0, 0, std::vector<double>(21, 1.0), {}};
  m.decode = {true, 0, 0, 1e-8, 0, false, 4e4, 4e4, 4e5, 8e5, 4, 4, std::vector<double>(21, 1.0), {}};
  m.bytes_per_pixel = 0.1;
  return m;
}

MediaSample Image(double decode_s) { return {"jpeg", 250, 400, 1, 50000, 1000, 2e-4, decode_s, 5e-4}; }
MediaSample Clip() { return {"mp4", 200, 500, 4, 40000, 4000, 2e-4, 4e-3, 1e-3}; }

TEST(MediaSynth, PredictsLinearAndProportionalFallback) {
  // Linear: 1 ms + 1e-8 x 2e5 pixels = 3 ms.
  EXPECT_NEAR(PredictStageS(Jpeg().decode, 1e5, 2e5, 1, false), 3e-3, 1e-12);
  // Read uses bytes only: 0.1 ms + 1e-9 x 1e5 = 0.2 ms (pixels ignored).
  EXPECT_NEAR(PredictStageS(Jpeg().read, 1e5, 9e9, 1, true), 2e-4, 1e-12);
  // Intercept only, measured at 1e5 pixels: proportional, 0.5 ms x 3e5 / 1e5 = 1.5 ms.
  EXPECT_NEAR(PredictStageS(Jpeg().augment, 0, 3e5, 1, false), 1.5e-3, 1e-12);
}

TEST(MediaSynth, NarrowRangeSlopeIsNotExtrapolated) {
  // Pixels measured over 1e5..1.02e5 only (2%): the fitted 1e-6 s/pixel with a -0.09 s intercept is
  // noise. At the mid-point 1.01e5 the fit gives -0.09 + 0.101 = 11 ms; 2.02e5 pixels (2x) -> 22 ms,
  // proportional, instead of the slope's -0.09 + 0.202 = 112 ms.
  StageCostFit f = Jpeg().decode;
  f.intercept_s = -0.09;
  f.s_per_pixel = 1e-6;
  f.pixels_min = 1e5;
  f.pixels_max = 1.02e5;
  EXPECT_TRUE(ScalesProportionally(f, false));
  EXPECT_NEAR(PredictStageS(f, 0, 2.02e5, 1, false), 0.022, 1e-12);
}

TEST(MediaSynth, UnchangedRowsKeepTheirRecordedCosts) {
  std::vector<MediaSample> s = {Image(2e-3), Clip()};
  const auto before = s;
  std::vector<std::string> warnings;
  ASSERT_TRUE(SynthesizeMedia({{"jpeg", Jpeg()}, {"mp4", Mp4()}}, {{"jpeg", {}}}, 1.0, 7, &s, &warnings).ok());
  EXPECT_EQ(s[0].decode_s, before[0].decode_s);
  EXPECT_EQ(s[1].read_bytes, before[1].read_bytes);
  EXPECT_TRUE(warnings.empty());
}

TEST(MediaSynth, ReshapedRowKeepsItsOwnDeviation) {
  // Recorded at 250 x 400 = 1e5 pixels: decode 3 ms against the regression's 1 ms + 1 ms = 2 ms (ratio 1.5).
  // Scale 2: 500 x 800 = 4e5 pixels -> regression 1 ms + 4 ms = 5 ms -> 5 x 1.5 = 7.5 ms.
  // Bytes = 0.5 B/pixel x 4e5 = 2e5; read: recorded 0.2 ms at 5e4 B (regression 0.15 ms) -> 0.3 ms
  // regression at 2e5 B = 0.1 + 0.2 = 0.3 ms -> 0.2 x 0.3 / 0.15 = 0.4 ms.
  // Augment (intercept only, proportional): 0.5 ms x 4e5 / 1e5 = 2 ms against 0.5 ms recorded -> x 4.
  std::vector<MediaSample> s = {Image(3e-3)};
  MediaShapeSpec spec;
  spec.scale = 2;
  std::vector<std::string> warnings;
  ASSERT_TRUE(SynthesizeMedia({{"jpeg", Jpeg()}}, {{"jpeg", spec}}, 1.0, 7, &s, &warnings).ok());
  EXPECT_EQ(s[0].width, 500);
  EXPECT_EQ(s[0].height, 800);
  EXPECT_EQ(s[0].read_bytes, 200000);
  EXPECT_NEAR(s[0].decode_s, 7.5e-3, 1e-12);
  EXPECT_NEAR(s[0].read_s, 4e-4, 1e-12);
  EXPECT_NEAR(s[0].augment_s, 2e-3, 1e-12);
  // 4e5 pixels is above the measured 1e5..2e5; the augment fit is flagged as assumed.
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("assumed"), std::string::npos);
  EXPECT_NE(warnings[1].find("extrapolating: media jpeg"), std::string::npos);
  // It names the measurement that would remove it (the media probe and calibrate's flag).
  EXPECT_NE(warnings[1].find("simreplay_capture.probe_media"), std::string::npos);
  EXPECT_NE(warnings[1].find("calibrate --media-probe"), std::string::npos);
}

TEST(MediaSynth, FramesScaleClipsProportionallyWhenNeverVaried) {
  // Clip of 200 x 500 x 4 = 4e5 pixels; 8 frames -> 8e5 pixels: decode 1e-8 x 8e5 = 8 ms against
  // 4 ms predicted at 4e5 (ratio 1: recorded 4 ms) -> 8 ms. Bytes 0.1 x 8e5 = 8e4; read intercept only,
  // measured at 4e4 B: x 2 -> 0.4 ms. out_bytes scale with frames: 4000 x 8 / 4 = 8000.
  std::vector<MediaSample> s = {Clip()};
  MediaShapeSpec spec;
  spec.frames = 8;
  std::vector<std::string> warnings;
  ASSERT_TRUE(SynthesizeMedia({{"mp4", Mp4()}}, {{"mp4", spec}}, 1.0, 7, &s, &warnings).ok());
  EXPECT_NEAR(s[0].decode_s, 8e-3, 1e-12);
  EXPECT_NEAR(s[0].read_s, 4e-4, 1e-12);
  EXPECT_EQ(s[0].out_bytes, 8000);
  EXPECT_EQ(s[0].read_bytes, 80000);
}

TEST(MediaSynth, SharesMoveOnlyTheRowsTheyMust) {
  // 8 images + 2 clips at 50/50: 3 images become clips, shaped like the recorded clips (200 x 500 x 4),
  // costed by the regression x residual 1 / worker_cost_scale 2: decode 1e-8 x 4e5 / 2 = 2 ms.
  std::vector<MediaSample> s;
  for (int i = 0; i < 8; ++i) s.push_back(Image(2e-3));
  s.push_back(Clip());
  s.push_back(Clip());
  MediaShapeSpec half;
  half.share = 0.5;
  std::vector<std::string> warnings;
  auto run = [&](uint64_t seed) {
    std::vector<MediaSample> out = s;
    EXPECT_TRUE(
        SynthesizeMedia({{"jpeg", Jpeg()}, {"mp4", Mp4()}}, {{"jpeg", half}, {"mp4", half}}, 2.0, seed, &out, &warnings)
            .ok());
    return out;
  };
  auto a = run(1);
  EXPECT_EQ(std::count_if(a.begin(), a.end(), [](const MediaSample& m) { return m.media == "mp4"; }), 5);
  EXPECT_EQ(a[8].decode_s, 4e-3);  // recorded clips stay as they were
  for (size_t i = 0; i < 8; ++i) {
    if (a[i].media != "mp4") continue;
    EXPECT_EQ(a[i].frames, 4);
    EXPECT_NEAR(a[i].decode_s, 2e-3, 1e-12);
  }
  // Deterministic for a seed.
  auto b = run(1);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].media, b[i].media);
}

TEST(MediaSynth, RejectsUnknownMediaAndBadShares) {
  std::vector<MediaSample> s = {Image(2e-3)};
  std::vector<std::string> warnings;
  EXPECT_FALSE(SynthesizeMedia({{"jpeg", Jpeg()}}, {{"webp", {}}}, 1.0, 1, &s, &warnings).ok());
  MediaShapeSpec a, b;
  a.share = 0.5, b.share = 0.2;
  EXPECT_FALSE(
      SynthesizeMedia({{"jpeg", Jpeg()}, {"mp4", Mp4()}}, {{"jpeg", a}, {"mp4", b}}, 1.0, 1, &s, &warnings).ok());
  MediaCostModel no_bpp = Jpeg();
  no_bpp.bytes_per_pixel = 0;
  MediaShapeSpec big;
  big.width = 1000;
  EXPECT_FALSE(SynthesizeMedia({{"jpeg", no_bpp}}, {{"jpeg", big}}, 1.0, 1, &s, &warnings).ok());
}

// A draw lands in each bin with equal probability and averages the bin's observed mean there, so a
// heavy last bin (2 .. 190, mean 4) adds its observed weight, not half the maximum.
TEST(MediaSynth, ResidualDrawsKeepEachBinsMean) {
  StageCostFit fit;
  fit.residual_ratio_quantiles = {0.5, 1.0, 2.0, 190.0};
  fit.residual_ratio_bin_means = {0.8, 1.5, 4.0};
  // Midpoint rule over both uniforms: bins 0..2, m points inside each.
  const int m = 20000;
  double sum = 0;
  for (size_t b = 0; b < 3; ++b) {
    double bin_sum = 0;
    for (int j = 0; j < m; ++j) {
      const double r = DrawResidualRatio(fit, (static_cast<double>(b) + 0.5) / 3, (j + 0.5) / m);
      EXPECT_GE(r, fit.residual_ratio_quantiles[b]);
      EXPECT_LE(r, fit.residual_ratio_quantiles[b + 1]);
      bin_sum += r;
    }
    EXPECT_NEAR(bin_sum / m, fit.residual_ratio_bin_means[b], 0.002 * fit.residual_ratio_bin_means[b]);
    sum += bin_sum / m / 3;
  }
  EXPECT_NEAR(sum, (0.8 + 1.5 + 4.0) / 3, 0.01);
  // Without bin means (older models): linear between the quantiles, the last bin averaging 96.
  fit.residual_ratio_bin_means.clear();
  EXPECT_NEAR(DrawResidualRatio(fit, 0.99, 0.5), 96.0, 1e-9);
  EXPECT_EQ(DrawResidualRatio(StageCostFit{}, 0.3, 0.3), 1.0);
}

TEST(MediaSynth, ParsesCalibratedMediaSection) {
  nlohmann::json media = {
      {"jpeg",
       {{"stages",
         {{"decode",
           {{"coefficients_s_per_unit", {{"intercept", 0.001}, {"bytes", 0.0}, {"pixels", 1e-8}, {"frames", 0.0}}},
            {"range", {{"bytes", {1, 2}}, {"pixels", {10, 20}}, {"frames", {1, 1}}}},
            {"residual_ratio_quantiles", {0.5, 1.0, 2.0}}}}}},
        {"shape", {{"bytes_per_pixel", 0.25}}}}}};
  auto m = ParseMediaCostModels(media, "m.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto& j = m->at("jpeg");
  EXPECT_TRUE(j.decode.present);
  EXPECT_FALSE(j.read.present);
  EXPECT_FALSE(j.decode.intercept_only);
  EXPECT_EQ(j.decode.pixels_max, 20);
  EXPECT_EQ(j.bytes_per_pixel, 0.25);
  media["jpeg"]["stages"]["decode"]["residual_ratio_bin_means"] = {0.7, 1.9};
  auto with_means = ParseMediaCostModels(media, "m.json");
  ASSERT_TRUE(with_means.ok()) << with_means.status().message();
  EXPECT_EQ(with_means->at("jpeg").decode.residual_ratio_bin_means, (std::vector<double>{0.7, 1.9}));
  for (const nlohmann::json& bad_means : {nlohmann::json{0.7}, nlohmann::json{0.4, 1.9}, nlohmann::json{0.7, "x"}}) {
    media["jpeg"]["stages"]["decode"]["residual_ratio_bin_means"] = bad_means;
    auto bad = ParseMediaCostModels(media, "m.json");
    ASSERT_FALSE(bad.ok()) << bad_means.dump();
    EXPECT_NE(bad.status().message().find("residual_ratio_bin_means"), std::string::npos);
  }
  media["jpeg"]["stages"]["decode"].erase("residual_ratio_bin_means");
  media["jpeg"]["stages"]["decode"]["residual_ratio_quantiles"] = {2.0, 1.0};
  auto bad = ParseMediaCostModels(media, "m.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m.json: formats.media.jpeg.stages.decode"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::models
