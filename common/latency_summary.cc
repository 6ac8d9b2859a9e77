#include "common/latency_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/quantile.h"

namespace simreplay {

namespace {

constexpr double kGamma = (1 + LatencySummary::kRelativeError) / (1 - LatencySummary::kRelativeError);
constexpr double kMinPositive = 1e-12;  // below a picosecond a latency is zero
const double kLogGamma = std::log(kGamma);

int32_t KeyOf(double value) { return static_cast<int32_t>(std::ceil(std::log(value) / kLogGamma)); }
// The value whose relative distance to both bucket edges (gamma^(k-1), gamma^k] is the same.
double ValueOf(int32_t key) { return 2 * std::pow(kGamma, key) / (kGamma + 1); }

}  // namespace

void LatencySummary::Add(double value) {
  if (count_ == 0) {
    max_ = min_ = value;
  } else {
    max_ = std::max(max_, value);
    min_ = std::min(min_, value);
  }
  ++count_;
  sum_ += value;
  if (sketched_) {
    AddToSketch(value);
    return;
  }
  values_.push_back(value);
  if (values_.size() > kExactLimit) SwitchToSketch();
}

void LatencySummary::AddToSketch(double value) {
  if (!(value > kMinPositive)) {
    ++zero_count_;
    return;
  }
  const int32_t key = KeyOf(value);
  if (buckets_.empty()) {
    key_offset_ = key;
    buckets_.assign(1, 0);
  } else if (key < key_offset_) {
    buckets_.insert(buckets_.begin(), static_cast<size_t>(key_offset_ - key), 0);
    key_offset_ = key;
  } else if (key - key_offset_ >= static_cast<int32_t>(buckets_.size())) {
    buckets_.resize(static_cast<size_t>(key - key_offset_) + 1, 0);
  }
  ++buckets_[static_cast<size_t>(key - key_offset_)];
}

void LatencySummary::SwitchToSketch() {
  sketched_ = true;
  for (double v : values_) AddToSketch(v);
  values_.clear();
  values_.shrink_to_fit();
}

double LatencySummary::SketchQuantile(double q) const {
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(count_ - 1);
  const auto rank = static_cast<int64_t>(std::floor(position));  // the order statistic below the position
  if (rank < zero_count_) return std::max(min_, 0.0);
  int64_t seen = zero_count_;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (rank < seen) return std::clamp(ValueOf(key_offset_ + static_cast<int32_t>(i)), min_, max_);
  }
  return max_;
}

LatencySummary::Figures LatencySummary::Summarize() const {
  Figures f;
  if (count_ == 0) return f;
  if (!sketched_) {
    std::vector<double> sorted = values_;
    std::sort(sorted.begin(), sorted.end());
    f.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
    f.p50 = SortedQuantileLinear(sorted, 0.50);
    f.p95 = SortedQuantileLinear(sorted, 0.95);
    f.p99 = SortedQuantileLinear(sorted, 0.99);
    f.max = sorted.back();
    return f;
  }
  f.mean = sum_ / static_cast<double>(count_);
  f.p50 = SketchQuantile(0.50);
  f.p95 = SketchQuantile(0.95);
  f.p99 = SketchQuantile(0.99);
  f.max = max_;
  return f;
}

nlohmann::json LatencySummary::ToJson() const {
  if (!sketched_) return {{"values", values_}};
  return {{"count", count_},           {"sum", sum_},        {"min", min_}, {"max", max_}, {"zero", zero_count_},
          {"key_offset", key_offset_}, {"buckets", buckets_}};
}

Result<LatencySummary> LatencySummary::FromJson(const nlohmann::json& j) {
  LatencySummary s;
  try {
    if (j.contains("values")) {
      for (const auto& v : j.at("values")) {
        if (!v.is_number()) return Status::Corruption("latency summary: a value is not a number");
        s.Add(v.get<double>());
      }
      return s;
    }
    s.sketched_ = true;
    s.count_ = j.at("count").get<int64_t>();
    s.sum_ = j.at("sum").get<double>();
    s.min_ = j.at("min").get<double>();
    s.max_ = j.at("max").get<double>();
    s.zero_count_ = j.at("zero").get<int64_t>();
    s.key_offset_ = j.at("key_offset").get<int32_t>();
    s.buckets_ = j.at("buckets").get<std::vector<int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("latency summary: ") + e.what());
  }
  const int64_t total = std::accumulate(s.buckets_.begin(), s.buckets_.end(), s.zero_count_);
  if (total != s.count_) return Status::Corruption("latency summary: bucket counts do not add up to its count");
  return s;
}

}  // namespace simreplay
