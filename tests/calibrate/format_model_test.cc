#include "calibrate/format_model.h"

#include <gtest/gtest.h>

#include "models/format_model.h"

namespace simreplay::calibrate {
namespace {

TEST(FormatModel, TarShardReadCostFromCatalogue) {
  auto p = models::CatalogueFormats();
  const auto& tar = p.containers.at("tar");
  // 1000 media bytes + 512 header -> 1536 bytes (three 512 B records); one open per 64 samples.
  EXPECT_EQ(models::ContainerReadBytes(tar, 1000), 1536);
  EXPECT_NEAR(models::ContainerReadS(tar, 1000, 1e9), 20e-6 / 64 + 1536 / 1e9, 1e-15);
}

TEST(FormatModel, ApplyFormatScalesEachSampleByTheModelRatio) {
  auto p = models::CatalogueFormats();
  p.reference_bandwidth_bytes_per_s = 1e9;
  std::vector<models::SampleIo> io = {{2 * (20e-6 + 8192 / 1e9), 8192, 0.01}};
  ASSERT_TRUE(models::ApplyFormat(p, "files", "lmdb", &io).ok());
  // files: 20 us + 8192 B; lmdb: 5 us + roundup(8192 + 16, 4096) = 12288 B. The sample was 2x its model.
  EXPECT_NEAR(io[0].read_s, 2 * (5e-6 + 12288 / 1e9), 1e-12);
  EXPECT_EQ(io[0].read_bytes, 12288);
  EXPECT_NEAR(io[0].cpu_s, 0.01, 1e-15);
}

TEST(FormatModel, SameFormatIsIdentityAndUnknownIsAnError) {
  auto p = models::CatalogueFormats();
  std::vector<models::SampleIo> io = {{0.001, 5000, 0.02}};
  ASSERT_TRUE(models::ApplyFormat(p, "files", "files", &io).ok());
  EXPECT_EQ(io[0].read_s, 0.001);
  auto s = models::ApplyFormat(p, "files", "zarr", &io);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("zarr"), std::string::npos);
}

TEST(FormatModel, JsonRoundTrip) {
  auto p = models::CatalogueFormats();
  p.captured = "tar";
  auto back = models::ParseFormatParams(models::FormatParamsToJson(p), "m.json: formats");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->captured, "tar");
  EXPECT_EQ(back->containers.at("tar").header_bytes, 512);
  EXPECT_EQ(models::FormatParamsToJson(*back), models::FormatParamsToJson(p));
}

TEST(FormatModel, FitContainerReadsRecoversLatencyAndBandwidth) {
  auto p = models::CatalogueFormats();
  std::vector<double> bytes, secs;
  for (int i = 1; i <= 50; ++i) {
    bytes.push_back(4096.0 * i);
    secs.push_back(80e-6 + 4096.0 * i / 5e8);
  }
  auto fit = FitContainerReads(bytes, secs, "hdf5", "t.jsonl", &p);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(p.containers["hdf5"].per_read_latency_s, 80e-6, 1e-9);
  EXPECT_NEAR(p.containers["hdf5"].bandwidth_bytes_per_s, 5e8, 1e3);
  EXPECT_FALSE(p.containers["hdf5"].assumed);
}

TEST(FormatModel, ContainerOfManifest) {
  EXPECT_EQ(ContainerOfManifest({{"data", {{"format", "lmdb"}}}}), "lmdb");
  EXPECT_EQ(ContainerOfManifest({{"notes", {{"format", "tar"}}}}), "tar");
  EXPECT_EQ(ContainerOfManifest(nlohmann::json::object()), "files");
}

}  // namespace
}  // namespace simreplay::calibrate
