// The what-if keys beyond the loader knobs: data.media (and, below, storage.tiers, data.access,
// decode.device) parse into typed configs and reject bad values naming the key.
#include <gtest/gtest.h>

#include "scenarios/scenario.h"
#include "tests/scenarios/scenario_test_util.h"

namespace simreplay::scenarios {
namespace {

using testing::Base;
using testing::ErrorOf;

TEST(WhatIfKeys, MediaParses) {
  auto j = Base();
  j["data"]["media"] = nlohmann::json::parse(
      R"({"jpeg": {"share": 0.7, "width": 512, "height": 512}, "mp4": {"share": 0.3, "frames": 16}})");
  auto s = ParseScenario(j, "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->data_media.size(), 2u);
  EXPECT_EQ(s->data_media.at("jpeg").width, 512);
  EXPECT_EQ(s->data_media.at("jpeg").share, 0.7);
  EXPECT_EQ(s->data_media.at("mp4").frames, 16);
  EXPECT_EQ(s->data_media.at("mp4").height, 0);  // as captured
}

TEST(WhatIfKeys, MediaRejectsBadValues) {
  auto with = [](const char* media) {
    auto j = Base();
    j["data"]["media"] = nlohmann::json::parse(media);
    return ErrorOf(j);
  };
  EXPECT_NE(with(R"({"jpeg": {"share": 0.5}, "mp4": {"share": 0.4}})").find("shares must sum to 1"), std::string::npos);
  EXPECT_NE(with(R"({"jpeg": {"share": 1.0}, "mp4": {"frames": 4}})").find("for every media"), std::string::npos);
  EXPECT_NE(with(R"({"jpeg": {"widht": 5}})").find("s.json: data.media.jpeg: unknown key 'widht'"), std::string::npos);
  EXPECT_NE(with(R"({"jpeg": {"width": -5}})").find("'width' must be in"), std::string::npos);
  EXPECT_NE(with(R"({"jpeg": {"scale": 2, "width": 5}})").find("not both"), std::string::npos);
  EXPECT_NE(with(R"({"jpeg": {"scale": 0}})").find("'scale'"), std::string::npos);
  EXPECT_NE(with(R"({})").find("non-empty"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::scenarios

namespace simreplay::scenarios {
namespace {

nlohmann::json WithKey(const char* section, const char* text) {
  auto j = nlohmann::json::parse(R"({"trace":"t.jsonl.gz","train":{"steps":10}})");
  j[section] = nlohmann::json::parse(text);
  return j;
}

std::string Error(const nlohmann::json& j) {
  auto s = ParseScenario(j, "s.json", "/base");
  return s.ok() ? "" : s.status().message();
}

TEST(WhatIfKeys, TiersParse) {
  auto s = ParseScenario(WithKey("storage", R"({"tiers": [{"kind": "nvme_cache", "bytes": 2e12},
      {"kind": "object_store", "latency_s": 0.03, "bytes_per_s_per_stream": 1e8, "max_streams": 64}]})"),
                         "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->storage.tiers.size(), 2u);
  EXPECT_TRUE(s->storage.tiers[0].AsCaptured());
  EXPECT_EQ(s->storage.tiers[0].capacity_bytes, 2e12);
  EXPECT_EQ(s->storage.tiers[1].max_streams, 64);
  EXPECT_EQ(s->storage.tiers[1].latency_s, 0.03);
}

TEST(WhatIfKeys, TiersRejectBadValues) {
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "s3"}]})")).find("s.json: storage.tiers[0]: 'kind'"),
            std::string::npos);
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "local"}, {"kind": "nvme_cache"}]})")).find("last tier"),
            std::string::npos);
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": []})")).find("1 to 8 tiers"), std::string::npos);
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "local", "latency_s": -1}]})")).find("latency_s"),
            std::string::npos);
  EXPECT_NE(Error(WithKey("storage", R"({"kind": "shared", "tiers": [{"kind": "local"}]})")).find("not both"),
            std::string::npos);
}

TEST(WhatIfKeys, StreamedTierAndRequestRate) {
  auto s = ParseScenario(WithKey("storage", R"({"tiers": [{"kind": "object_store", "latency_s": 0.03,
      "bytes_per_s_per_stream": 1e8, "shard_samples": 1000, "requests_per_s": 3500}]})"),
                         "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->storage.tiers[0].shard_samples, 1000);
  EXPECT_EQ(s->storage.tiers[0].requests_per_s, 3500);
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "local", "shard_samples": -4}]})")).find("shard_samples"),
            std::string::npos);
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "local", "requests_per_s": -1}]})")).find("requests_per_s"),
            std::string::npos);
}

TEST(WhatIfKeys, StreamedShardLengths) {
  auto s = ParseScenario(WithKey("storage", R"({"tiers": [{"kind": "object_store", "latency_s": 0.03,
      "bytes_per_s_per_stream": 1e8, "shard_samples": 64, "shard_bytes": [1064960, 0, 512000]}]})"),
                         "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->storage.tiers[0].shard_bytes, (std::vector<double>{1064960, 0, 512000}));
  const std::string negative =
      Error(WithKey("storage", R"({"tiers": [{"kind": "local", "shard_samples": 4, "shard_bytes": [10, -1]}]})"));
  EXPECT_NE(negative.find("'shard_bytes'[1]"), std::string::npos) << negative;
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "local", "shard_samples": 4, "shard_bytes": 10}]})"))
                .find("must be an array"),
            std::string::npos);
  EXPECT_NE(Error(WithKey("storage", R"({"tiers": [{"kind": "local", "shard_bytes": [10]}]})")).find("needs 'shard_samples'"),
            std::string::npos);
}

TEST(WhatIfKeys, AccessAndDecodeDevice) {
  auto s = ParseScenario(WithKey("data", R"({"format": "tfrecord", "access": "sequential"})"), "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->data_sequential);
  EXPECT_NE(Error(WithKey("data", R"({"access": "strided"})")).find("'access' must be"), std::string::npos);
  auto g = ParseScenario(WithKey("decode", R"({"device": "gpu", "gpu_s_per_pixel": 2e-9})"), "s.json", "/base");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->decode_on_gpu);
  EXPECT_EQ(g->gpu_decode.s_per_pixel, 2e-9);
  EXPECT_NE(Error(WithKey("decode", R"({"device": "tpu"})")).find("'device' must be"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::scenarios
