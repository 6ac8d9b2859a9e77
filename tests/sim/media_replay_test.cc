// sim/media_replay: data.media applied to a cost table through a model's formats.media section.
#include "sim/media_replay.h"

#include <gtest/gtest.h>

namespace simreplay::sim {
namespace {

// Four 100 x 100 JPEGs with a 2 ms decode. The model: decode = 1 ms + 1e-7 s/pixel (measured over
// 5e3..2e4 pixels), 0.5 bytes per pixel.
struct Fixture {
  replay::SampleCostTable table;
  models::ModelParams model;
  Fixture() {
    table.formats = {"jpeg"};
    for (int i = 0; i < 4; ++i) {
      replay::SampleCost c{1e-4, 2e-3, 0, 5000, 1000, 0, false};
      c.width = 100, c.height = 100, c.frames = 1;
      table.samples.push_back(c);
    }
    model.extra["formats"]["media"]["jpeg"] = {
        {"stages",
         {{"decode",
           {{"coefficients_s_per_unit", {{"intercept", 1e-3}, {"bytes", 0.0}, {"pixels", 1e-7}, {"frames", 0.0}}},
            {"range", {{"bytes", {2500, 10000}}, {"pixels", {5000, 20000}}, {"frames", {1, 1}}}},
            {"residual_ratio_quantiles", std::vector<double>(21, 1.0)}}}}},
        {"shape", {{"bytes_per_pixel", 0.5}}}};
  }
};

TEST(MediaReplay, ScalesImagesAndSaysSo) {
  // Scale 2: 200 x 200 = 4e4 pixels -> decode 1 ms + 4 ms = 5 ms against 2 ms at 1e4 pixels: x 2.5 of the
  // recorded 2 ms = 5 ms; bytes 0.5 x 4e4 = 2e4; 4e4 pixels is beyond the measured 2e4: a warning.
  Fixture f;
  models::MediaShapeSpec scale2;
  scale2.scale = 2;
  auto out = ApplyMedia(f.table, f.model, {{"jpeg", scale2}}, 1);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (const auto& s : out->samples) {
    EXPECT_EQ(s.width, 200);
    EXPECT_EQ(s.read_bytes, 20000);
    EXPECT_NEAR(s.decode_s, 5e-3, 1e-12);
  }
  bool warned = false;
  for (const auto& w : out->warnings) warned |= w.find("extrapolating: media jpeg") != std::string::npos;
  EXPECT_TRUE(warned);
  // ... and typed, for the planner's interval widening (never read back from the words).
  EXPECT_EQ(out->extrapolated, std::vector<std::string>{"data.media.jpeg.pixels"});
  // Within the measured range: nothing extrapolated.
  models::MediaShapeSpec same;
  same.scale = 1;
  auto within = ApplyMedia(f.table, f.model, {{"jpeg", same}}, 1);
  ASSERT_TRUE(within.ok()) << within.status().message();
  EXPECT_TRUE(within->extrapolated.empty());
}

TEST(MediaReplay, NeedsACalibratedModelAndKnownMedia) {
  Fixture f;
  models::ModelParams bare;
  EXPECT_FALSE(ApplyMedia(f.table, bare, {{"jpeg", {}}}, 1).ok());
  auto unknown = ApplyMedia(f.table, f.model, {{"webp", {}}}, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'webp'"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::sim
