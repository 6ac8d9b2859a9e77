#include "replay/run_window.h"

#include <gtest/gtest.h>

namespace simreplay::replay {
namespace {

BatchRecord Batch(int64_t next_start_ns, int64_t wait_ns) {
  BatchRecord b;
  b.t_next_start_ns = next_start_ns;
  b.wait_ns = wait_ns;
  b.t_ready_ns = next_start_ns + wait_ns;
  return b;
}

StepRecord Step(int64_t start_ns, int64_t step_ns) {
  StepRecord s;
  s.t_start_ns = start_ns;
  s.step_ns = step_ns;
  return s;
}

TEST(RunWindow, EmptyIsZero) {
  RunWindow w;
  EXPECT_EQ(w.wall_s(), 0);
}

TEST(RunWindow, FromFirstIterToLastStepEnd) {
  RunWindow w;
  w.AddBatch(Batch(2'000'000'000, 500'000'000));  // next() at 2 s, handed over at 2.5 s
  w.AddStep(Step(2'500'000'000, 1'000'000'000));  // step ends at 3.5 s
  w.AddEpochStart(1'000'000'000);                 // iter() at 1 s
  // 3.5 s - 1 s.
  EXPECT_DOUBLE_EQ(w.wall_s(), 2.5);
}

TEST(RunWindow, FallsBackToBatchesThenSamples) {
  RunWindow batches_only;
  batches_only.AddBatch(Batch(1'000'000'000, 250'000'000));
  batches_only.AddBatch(Batch(2'000'000'000, 250'000'000));
  // First next() at 1 s to the last hand-off at 2.25 s.
  EXPECT_DOUBLE_EQ(batches_only.wall_s(), 1.25);

  RunWindow samples_only;
  SampleRecord s;
  s.t_start_ns = 100;
  s.read_ns = 10;
  s.decode_ns = 20;
  s.augment_ns = 30;
  samples_only.AddSample(s);
  // 100 ns to 160 ns.
  EXPECT_EQ(samples_only.end_ns() - samples_only.start_ns(), 60);
}

TEST(RunWindow, OlderBatchesWithoutNextStartUseReadyMinusWait) {
  BatchRecord b;
  b.t_ready_ns = 3'000'000'000;
  b.wait_ns = 1'000'000'000;  // next() called at 2 s
  RunWindow w;
  w.AddBatch(b);
  w.AddStep(Step(3'000'000'000, 500'000'000));
  EXPECT_DOUBLE_EQ(w.wall_s(), 1.5);
}

}  // namespace
}  // namespace simreplay::replay
