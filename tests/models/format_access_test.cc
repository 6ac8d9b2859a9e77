// Closed forms of the TFRecord and Parquet container entries and of data.access (models/format_model.h).
#include <gtest/gtest.h>

#include "models/format_model.h"

namespace simreplay::models {
namespace {

TEST(FormatAccess, TfrecordRandomReadsAPageSequentialStreams) {
  const FormatParams formats = CatalogueFormats();  // kept: .at() of a temporary would dangle (ASan found it)
  const auto& t = formats.containers.at("tfrecord");
  // 1000 media bytes + 16 B framing = 1016 B. Random: rounded up to a 4096 B page; one open per 64.
  EXPECT_EQ(ContainerReadBytes(t, 1000, false), 4096);
  EXPECT_NEAR(ContainerReadS(t, 1000, 1e9, false), 20e-6 / 64 + 4096 / 1e9, 1e-15);
  // Sequential: the 1016 B that really move, no seek.
  EXPECT_EQ(ContainerReadBytes(t, 1000, true), 1016);
  EXPECT_NEAR(ContainerReadS(t, 1000, 1e9, true), 20e-6 / 64 + 1016 / 1e9, 1e-15);
}

TEST(FormatAccess, ParquetRandomDecodesAWholePage) {
  const FormatParams formats = CatalogueFormats();
  const auto& p = formats.containers.at("parquet");
  EXPECT_TRUE(p.assumed);
  // Random: 60 us / 64 + 20 us seek + 1 MiB page at 1 GB/s; sequential: 60 us / 64 + (1000 + 28) B.
  EXPECT_NEAR(ContainerReadS(p, 1000, 1e9, false), 60e-6 / 64 + 20e-6 + 1048576 / 1e9, 1e-15);
  EXPECT_NEAR(ContainerReadS(p, 1000, 1e9, true), 60e-6 / 64 + 1028 / 1e9, 1e-15);
}

TEST(FormatAccess, FilesIgnoreAccessAndSameFormatSequentialIsIdentityForThem) {
  auto params = CatalogueFormats();
  const auto& f = params.containers.at("files");
  EXPECT_EQ(ContainerReadS(f, 5000, 1e9, true), ContainerReadS(f, 5000, 1e9, false));
  std::vector<SampleIo> io = {{0.001, 8192, 0.02}};
  ASSERT_TRUE(ApplyFormat(params, "files", "files", &io, true).ok());
  EXPECT_EQ(io[0].read_s, 0.001);
}

TEST(FormatAccess, FilesToTfrecordKeepsTheSamplesDeviation) {
  // files has no header, so the 8192 B read are the media bytes. At 1 GB/s: model(files) = 20 us open +
  // 8192 B = 28.192 us, and the recorded 56.384 us is 2x that. model(tfrecord, random) = 20 us / 64 +
  // roundup(8192 + 16, 4096) = 12288 B -> 0.3125 + 12.288 us, x 2 keeps the sample's deviation.
  // CPU: + 1 ns/B x 12288 B of CRC-32C.
  auto params = CatalogueFormats();
  params.reference_bandwidth_bytes_per_s = 1e9;
  std::vector<SampleIo> io = {{56.384e-6, 8192, 0.01}};
  ASSERT_TRUE(ApplyFormat(params, "files", "tfrecord", &io).ok());
  EXPECT_NEAR(io[0].read_s, 2 * (0.3125e-6 + 12288e-9), 1e-12);
  EXPECT_EQ(io[0].read_bytes, 12288);
  EXPECT_NEAR(io[0].cpu_s, 0.01 + 12288e-9, 1e-15);
}

}  // namespace
}  // namespace simreplay::models
