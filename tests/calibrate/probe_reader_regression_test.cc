// Regressions found while fuzzing the storage-probe reader (docs/reliability.md): each used to abort
// or to be accepted silently. ReadProbeFile is the one reader of the format (calibrate/storage_probe.h).
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "calibrate/storage_probe.h"

namespace simreplay::calibrate {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ProbeReader, RegressionNonStringSchemaIsAnError) {
  const std::string path = Write("schema_number.json", "{\"schema\": 7}\n");
  auto doc = ReadProbeFile(path);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().message(), path + ":1: not a simreplay.probe/1 document");
}

TEST(ProbeReader, RegressionHugeConcurrencyIsAnError) {
  // 4294967297 = 2^32 + 1 used to wrap to 1 in get<int>().
  const std::string path = Write(
      "huge_concurrency.json",
      "{\"schema\": \"simreplay.probe/1\", \"fit\": {\"random\": {\"latency_s\": 1e-4, "
      "\"max_useful_concurrency\": 4294967297}}}\n");
  auto doc = ReadProbeFile(path);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("fit.random.max_useful_concurrency"), std::string::npos)
      << doc.status().message();
}

TEST(ProbeReader, RegressionNegativeLatencyIsAnError) {
  const std::string path =
      Write("negative_latency.json",
            "{\"schema\": \"simreplay.probe/1\", \"fit\": {\"sequential\": {\"latency_s\": -1}}}\n");
  auto doc = ReadProbeFile(path);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("fit.sequential.latency_s"), std::string::npos) << doc.status().message();
}

TEST(ProbeReader, RegressionNumberOverflowNamesFileAndLine) {
  const std::string path = Write("overflow.json", "{\"schema\": \"simreplay.probe/1\",\n \"fit\": 1e999}\n");
  auto doc = ReadProbeFile(path);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().message(), path + ":2: a number out of range: 1e999 does not fit a 64-bit float");
}

}  // namespace
}  // namespace simreplay::calibrate
