// The built-in accelerator catalogue and the roofline step-time rule.
#include "models/accelerator_catalogue.h"

#include <gtest/gtest.h>

namespace simreplay::models {
namespace {

TEST(AcceleratorCatalogue, BuiltinHoldsTheDatasheetFigures) {
  const auto& c = AcceleratorCatalogue::Builtin();
  for (const char* name : {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "mi300x"}) {
    EXPECT_NE(c.Find(name), nullptr) << name;
  }
  const Accelerator* h200 = c.Find("h200");
  ASSERT_NE(h200, nullptr);
  EXPECT_DOUBLE_EQ(h200->memory_bytes, 141e9);
  EXPECT_DOUBLE_EQ(h200->hbm_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200->bf16_flops_per_s, 989e12);
  EXPECT_EQ(c.Find("tpu-v5"), nullptr);
}

TEST(AcceleratorCatalogue, RooflineRuleScalesEachShareByItsRoof) {
  const auto& c = AcceleratorCatalogue::Builtin();
  const Accelerator& a100 = *c.Find("a100-80gb");
  const Accelerator& h100 = *c.Find("h100-sxm");
  // All compute-bound: 312/989 of the time. All memory-bound: 2.039/3.35. Half and half: the mean.
  EXPECT_NEAR(ScaleStepTimeS(1.0, a100, h100, 1.0), 312.0 / 989, 1e-12);
  EXPECT_NEAR(ScaleStepTimeS(1.0, a100, h100, 0.0), 2.039 / 3.35, 1e-12);
  EXPECT_NEAR(ScaleStepTimeS(2.0, a100, h100, 0.5), 2.0 * (0.5 * 312 / 989 + 0.5 * 2.039 / 3.35), 1e-12);
  EXPECT_DOUBLE_EQ(ScaleStepTimeS(0.3, a100, a100, 0.5), 0.3);
}

TEST(AcceleratorCatalogue, RejectsBadCatalogues) {
  auto bad_schema = AcceleratorCatalogue::Parse({{"schema", "x/1"}, {"accelerators", {}}}, "c.json");
  ASSERT_FALSE(bad_schema.ok());
  EXPECT_NE(bad_schema.status().message().find("expected schema"), std::string::npos);
  nlohmann::json one = {{"name", "g"},
                        {"memory_bytes", -1},
                        {"hbm_bytes_per_s", 1},
                        {"bf16_flops_per_s", 1},
                        {"intra_node_bytes_per_s", 1}};
  auto negative = AcceleratorCatalogue::Parse({{"schema", kAcceleratorSchema}, {"accelerators", {one}}}, "c.json");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("c.json: accelerators[0]"), std::string::npos);
  one["memory_bytes"] = 1;
  auto duplicate =
      AcceleratorCatalogue::Parse({{"schema", kAcceleratorSchema}, {"accelerators", {one, one}}}, "c.json");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_NE(duplicate.status().message().find("duplicate"), std::string::npos);
}

TEST(AcceleratorCatalogue, DeviceNamesAndSoftwareStack) {
  const auto& c = AcceleratorCatalogue::Builtin();
  // Names as torch.cuda.get_device_name reports them.
  const std::pair<const char*, const char*> cases[] = {{"NVIDIA A100-SXM4-80GB", "a100-80gb"},
                                                       {"NVIDIA A100-SXM4-40GB", "a100-40gb"},
                                                       {"NVIDIA H100 80GB HBM3", "h100-sxm"},
                                                       {"NVIDIA H100 PCIe", "h100-pcie"},
                                                       {"NVIDIA H200", "h200"},
                                                       {"AMD Instinct MI300X", "mi300x"}};
  for (const auto& [device, name] : cases) {
    const Accelerator* found = c.FindByDeviceName(device);
    ASSERT_NE(found, nullptr) << device;
    EXPECT_EQ(found->name, name) << device;
    EXPECT_TRUE(c.Find(name)->MatchesDeviceName(device)) << device;
  }
  EXPECT_EQ(c.FindByDeviceName("Tesla V100-SXM2-32GB"), nullptr);
  EXPECT_FALSE(c.Find("a100-80gb")->MatchesDeviceName("NVIDIA A100-SXM4-40GB"));
  EXPECT_TRUE(c.Find("h200")->MatchesDeviceName("nvidia h200"));  // case-insensitive
  EXPECT_EQ(c.Find("mi300x")->software_stack, "rocm");
  EXPECT_EQ(c.Find("h100-sxm")->software_stack, "cuda");

  nlohmann::json one = {{"name", "g"},          {"memory_bytes", 1},          {"hbm_bytes_per_s", 1},
                        {"bf16_flops_per_s", 1}, {"intra_node_bytes_per_s", 1}, {"software_stack", "opencl"}};
  auto bad_stack = AcceleratorCatalogue::Parse({{"schema", kAcceleratorSchema}, {"accelerators", {one}}}, "c.json");
  ASSERT_FALSE(bad_stack.ok());
  EXPECT_NE(bad_stack.status().message().find("software_stack"), std::string::npos);
  one["software_stack"] = "cuda";
  one["device_names"] = {1};
  auto bad_names = AcceleratorCatalogue::Parse({{"schema", kAcceleratorSchema}, {"accelerators", {one}}}, "c.json");
  ASSERT_FALSE(bad_names.ok());
  EXPECT_NE(bad_names.status().message().find("device_names"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::models
