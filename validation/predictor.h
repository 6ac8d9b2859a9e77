// Predicts one case of an experiment with the simulator: the case's DataLoader configuration on a
// model calibrated from another case, run for the same steps as the real runs, and summarised with
// the same definitions the bench uses (warm-up steps excluded from throughput, waits and GPU idle).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/metrics.h"
#include "validation/experiment_spec.h"

namespace simreplay::validation {

struct Prediction {
  std::map<std::string, double> values;  // metric (validation/measurement.h names) -> predicted value
  std::string model_path;                // model the prediction used
  std::string calibrated_from;           // case whose trace calibrated that model
  std::string accelerator_note;
  sim::Bottleneck bottleneck;  // the simulator's verdict: a hypothesis
  std::vector<std::string> warnings;
};

struct PredictOptions {
  int64_t dataset_samples = 0;  // samples per epoch of the dataset (the bench's len(dataset))
  // The bench's emulated step is a sleep of fixed mean per micro-batch whatever the batch size; the
  // simulator would scale a measured step time linearly with batch size (right for a real GPU). When
  // false, the prediction pins the step time to the model's measured value.
  bool step_time_scales_with_batch = false;
};

// REQUIRES: model_path names a model written by `simreplay calibrate` that names its trace.
Result<Prediction> PredictCase(const ExperimentSpec& spec, const ExperimentCase& c, const std::string& model_path,
                               const PredictOptions& options);

// Sizes of the first `steps` batches of a run over a dataset of `dataset_samples` (drop_last false):
// full batches, then the epoch's remainder, epoch after epoch.
std::vector<int64_t> BatchSizes(int64_t dataset_samples, int batch_size, int steps);

}  // namespace simreplay::validation
