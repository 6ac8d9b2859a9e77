#include "calibrate/format_model.h"

#include <algorithm>

namespace simreplay::calibrate {

std::string ContainerOfManifest(const nlohmann::json& manifest) {
  for (const char* section : {"data", "notes"}) {
    if (manifest.contains(section) && manifest[section].is_object() && manifest[section].contains("format") &&
        manifest[section]["format"].is_string()) {
      return manifest[section]["format"].get<std::string>();
    }
  }
  return "files";
}

Result<RobustFit> FitContainerReads(const std::vector<double>& read_bytes, const std::vector<double>& read_s,
                                    const std::string& container, const std::string& source,
                                    models::FormatParams* params) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(read_bytes.size()), 1);
  Eigen::VectorXd y(static_cast<Eigen::Index>(read_s.size()));
  for (size_t i = 0; i < read_bytes.size(); ++i) {
    x(static_cast<Eigen::Index>(i), 0) = read_bytes[i];
    y[static_cast<Eigen::Index>(i)] = read_s[i];
  }
  auto fit = FitHuber(x, y, {"bytes"}, source + ": read cost of format " + container);
  if (!fit.ok()) return fit.status();
  auto& c = params->containers[container];
  if (fit->used[1] && fit->coefficients[1] > 0) {
    c.open_s = 0;
    c.samples_per_open = 1;
    c.per_read_latency_s = std::max(0.0, fit->coefficients[0]);
    c.bandwidth_bytes_per_s = 1.0 / fit->coefficients[1];
    c.assumed = false;
    c.source = "fit of read times in " + source;
  }
  return fit;
}

Result<replay::SampleCostTable> ApplyFormat(const replay::SampleCostTable& in, const models::FormatParams& params,
                                            const std::string& target_format) {
  std::string from = ContainerOfManifest(in.manifest);
  if (!params.captured.empty() && !in.manifest.contains("data")) from = params.captured;
  std::vector<models::SampleIo> io;
  io.reserve(in.samples.size());
  for (const auto& s : in.samples) io.push_back({s.read_s, s.read_bytes, s.decode_s + s.augment_s});
  SIMREPLAY_RETURN_IF_ERROR(models::ApplyFormat(params, from, target_format, &io));
  replay::SampleCostTable out = in;
  for (size_t i = 0; i < io.size(); ++i) {
    auto& s = out.samples[i];
    s.decode_s = std::max(0.0, s.decode_s + io[i].cpu_s - (in.samples[i].decode_s + in.samples[i].augment_s));
    s.read_s = io[i].read_s;
    s.read_bytes = io[i].read_bytes;
  }
  out.warnings.push_back("per-sample read costs transformed from format '" + from + "' to '" + target_format +
                         "' (models/format_model.h)");
  return out;
}

}  // namespace simreplay::calibrate
