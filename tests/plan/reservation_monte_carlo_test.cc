// The Monte Carlo reservation against the exact expected wall time (Daly 2006): its mean agrees within
// the sampling error where failures are rare and where they are frequent (there the first-order form
// is far outside it); deterministic; bounded.
#include "plan/reservation_monte_carlo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "common/random.h"
#include "plan/goodput.h"

namespace simreplay::plan {
namespace {

constexpr double kDay = 86400.0;

struct Case {
  double tau, delta, restart, mtbf, segments;
};

// Analytic exact wall time, Monte Carlo mean and standard error (days), first-order wall time (days).
struct Compared {
  double exact_days, first_order_days, mc_mean_days, mc_se_days, mc_failures, exact_failures;
};

Compared Compare(const Case& c, int64_t trials) {
  GoodputInput g;
  g.work_s = c.tau * c.segments;  // whole segments, as the exact expression counts them
  g.training_s = g.work_s;
  g.job_mtbf_s = c.mtbf;
  g.checkpoint_write_s = c.delta;
  g.restart_s = c.restart;
  g.auto_interval = false;
  g.every_s = c.tau;
  const Goodput exact = ComputeGoodput(g);
  ReplayInput in;
  in.work_s = g.work_s;
  in.checkpoint_interval_s = c.tau;
  in.checkpoint_write_s = c.delta;
  in.restart_s = c.restart;
  in.job_mtbf_s = c.mtbf;
  ReplayOptions options;
  options.trials = trials;
  options.seed = 23;
  const ReservationDistribution d = SimulateReservation(in, {}, options);
  EXPECT_EQ(d.trials, trials);
  return {exact.wall_s / kDay, exact.first_order_wall_s / kDay, d.mean_days, d.stddev_days / std::sqrt(trials),
          d.mean_failures, exact.failures};
}

// Tolerance: 4 standard errors of the mean from K trials (a false alarm about once in 16,000 runs;
// the draws are fixed, so the test is deterministic anyway).
TEST(ReservationMonteCarlo, MeanAgreesWithTheExactExpressionWhereFailuresAreRare) {
  // 30 days of work in 1-hour segments, 60 s saves, 10-minute restarts, a failure every 2,000 h:
  // 0.37 interruptions per reservation; first order and exact differ by 0.01%.
  const Compared c = Compare({3600, 60, 600, 2000 * 3600.0, 720}, 4000);
  std::printf("rare: exact %.5f d, first order %.5f d, Monte Carlo %.5f +- %.5f d (K = 4000), failures %.4f vs %.4f\n",
              c.exact_days, c.first_order_days, c.mc_mean_days, c.mc_se_days, c.mc_failures, c.exact_failures);
  EXPECT_NEAR(c.mc_mean_days, c.exact_days, 4 * c.mc_se_days);
  EXPECT_NEAR(c.first_order_days / c.exact_days, 1, 5e-4);
  EXPECT_NEAR(c.mc_failures, c.exact_failures, 0.05);
}

TEST(ReservationMonteCarlo, MeanAgreesWithTheExactExpressionWhereFailuresAreFrequentAndFirstOrderDoesNot) {
  // A failure every hour, 30-minute segments, 2-minute saves, 20-minute restarts:
  // (tau/2 + R)/M = 0.583. Exact: 3600 e^{1/3} (e^{1920/3600} - 1) / 1800 = 1.96671 x work; first
  // order: 1.06667 / 0.41667 = 2.56 x work (+30%).
  const Compared c = Compare({1800, 120, 1200, 3600, 480}, 4000);
  std::printf("frequent: exact %.4f d, first order %.4f d, Monte Carlo %.4f +- %.4f d (K = 4000), failures %.1f vs %.1f\n",
              c.exact_days, c.first_order_days, c.mc_mean_days, c.mc_se_days, c.mc_failures, c.exact_failures);
  EXPECT_NEAR(c.exact_days * kDay / (1800 * 480), 1.96671, 1e-5);
  EXPECT_NEAR(c.mc_mean_days, c.exact_days, 4 * c.mc_se_days);
  EXPECT_GT(std::abs(c.first_order_days - c.mc_mean_days), 100 * c.mc_se_days);
  EXPECT_NEAR(c.mc_failures / c.exact_failures, 1, 0.01);
}

TEST(ReservationMonteCarlo, QuantilesAndSlotProbabilities) {
  ReplayInput in;
  in.work_s = 20 * kDay;
  in.checkpoint_interval_s = 3600;
  in.checkpoint_write_s = 60;
  in.restart_s = 1800;
  in.job_mtbf_s = 10 * 3600;
  in.fixed_s = kDay;
  in.buffer_fraction = 0.1;
  ReplayOptions options;
  options.trials = 2000;
  const ReservationDistribution d = SimulateReservation(in, {20, 26, 40}, options);
  EXPECT_LE(d.p50_days, d.p90_days);
  EXPECT_LE(d.p90_days, d.p99_days);
  // Failure-free: (1 + 20 x 24 x 61/60 / 24 days) x 1.1 = 23.47 days; no trial is shorter.
  EXPECT_GT(d.p50_days, (1 + 20 * 61.0 / 60) * 1.1);
  ASSERT_EQ(d.p_within.size(), 3u);
  EXPECT_DOUBLE_EQ(d.p_within[0], 0);
  EXPECT_DOUBLE_EQ(d.p_within[2], 1);
  // P(within p90) is 0.9 to within one trial.
  const ReservationDistribution at_p90 = SimulateReservation(in, {d.p90_days}, options);
  EXPECT_NEAR(at_p90.p_within[0], 0.9, 1.0 / 2000);
}

TEST(ReservationMonteCarlo, DeterministicAndSeeded) {
  ReplayInput in;
  in.work_s = 5 * kDay;
  in.checkpoint_interval_s = 1800;
  in.checkpoint_write_s = 30;
  in.restart_s = 600;
  in.job_mtbf_s = 7200;
  ReplayOptions options;
  options.trials = 500;
  options.seed = 7;
  const ReservationDistribution a = SimulateReservation(in, {7}, options);
  const ReservationDistribution b = SimulateReservation(in, {7}, options);
  EXPECT_EQ(a.mean_days, b.mean_days);  // bit for bit
  EXPECT_EQ(a.p99_days, b.p99_days);
  EXPECT_EQ(a.p_within, b.p_within);
  options.seed = 8;
  EXPECT_NE(SimulateReservation(in, {7}, options).mean_days, a.mean_days);
  // Trial k is Rng(DeriveSeed(seed, k)) whatever K: one trial replays alone.
  int64_t failures = 0;
  const double once = ReplayTrainingOnceS(in, Rng::DeriveSeed(7, 0), &failures);
  options.seed = 7;
  options.trials = 1;
  EXPECT_EQ(SimulateReservation(in, {}, options).mean_days, once / kDay);
}

TEST(ReservationMonteCarlo, NoFailuresIsWorkPlusSavesAndTheWorkIsBounded) {
  ReplayInput in;
  in.work_s = 10000;
  in.checkpoint_interval_s = 1000;
  in.checkpoint_write_s = 10;
  in.restart_s = 100;
  in.job_mtbf_s = std::numeric_limits<double>::infinity();
  ReplayOptions options;
  options.trials = 100;
  ReservationDistribution d = SimulateReservation(in, {1}, options);
  EXPECT_NEAR(d.mean_days, 10100 / kDay, 1e-15);  // the same trial 100 times, summed in floating point
  EXPECT_NEAR(d.stddev_days, 0, 1e-15);
  EXPECT_DOUBLE_EQ(d.p_within[0], 1);
  // A work past the event bound runs fewer trials and says so: a failure every 100 s for 1e6 s of
  // work in 10 s segments with 1 s saves and restarts expects 1e6 x 100 e^{0.01} (e^{0.11} - 1) / 10
  // / 100 = 11,750 interruptions per trial: 85 trials fit in 1e6 events.
  in.work_s = 1e6;
  in.checkpoint_interval_s = 10;
  in.checkpoint_write_s = 1;
  in.job_mtbf_s = 100;
  in.restart_s = 1;
  options.trials = 1000;
  options.max_events = 1e6;
  d = SimulateReservation(in, {}, options);
  EXPECT_EQ(d.trials, 85);
  EXPECT_NE(d.note.find("trials run"), std::string::npos) << d.note;
}

// A known failure schedule (reliability.known_failures) replays exactly those failures: totals by hand.
// 1,000 s of work in segments of tau = 100 s, each followed by a save of 10 s (failure-free: 1,100 s),
// restarts of 50 s.
ReplayInput KnownScheduleJob(std::vector<double> failures) {
  ReplayInput in;
  in.work_s = 1000;
  in.checkpoint_interval_s = 100;
  in.checkpoint_write_s = 10;
  in.restart_s = 50;
  in.job_mtbf_s = 3600;  // not used once a schedule is given
  in.known_schedule = true;
  in.known_failures_s = std::move(failures);
  return in;
}

double KnownTotalS(const ReplayInput& in, int64_t* failures) {
  ReplayOptions options;
  options.trials = 2000;
  options.seed = 5;
  const ReservationDistribution d = SimulateReservation(in, {1}, options);
  EXPECT_EQ(d.trials, 1);  // no draws: one trial is the whole distribution
  EXPECT_NE(d.note.find("known failure schedule"), std::string::npos) << d.note;
  EXPECT_EQ(d.mean_days, d.p50_days);
  *failures = static_cast<int64_t>(d.mean_failures);
  int64_t once = 0;
  const double total = ReplayTrainingOnceS(in, 99, &once);  // the seed does not matter
  EXPECT_EQ(once, *failures);
  EXPECT_NEAR(d.mean_days * kDay, total, 1e-9);
  return total;
}

TEST(ReservationMonteCarloKnownFailures, OneFailureLosesTheWorkSinceTheLastSavePlusTheRestart) {
  // Failure at 345 s: three segments saved by 330 s; 15 s of the fourth lost; restart to 395 s; seven
  // segments of 110 s left: 395 + 770 = 1,165 = 1,100 + 15 lost + 50 restart.
  int64_t failures = 0;
  EXPECT_NEAR(KnownTotalS(KnownScheduleJob({345}), &failures), 1165, 1e-9);
  EXPECT_EQ(failures, 1);
}

TEST(ReservationMonteCarloKnownFailures, AFailureDuringASaveLosesTheWholeSegment) {
  // Failure at 105 s, inside the first save (100-110 s): all 105 s lost, restart to 155 s, then ten
  // segments: 155 + 1,100 = 1,255.
  int64_t failures = 0;
  EXPECT_NEAR(KnownTotalS(KnownScheduleJob({105}), &failures), 1255, 1e-9);
  EXPECT_EQ(failures, 1);
}

TEST(ReservationMonteCarloKnownFailures, AFailureDuringTheRestartRestartsItAndLaterOnesCount) {
  // 345 s as above; 370 s cuts the restart short (restart again to 420 s); then 420 + 770 = 1,190.
  // A third at 700 s: 2 segments saved after 420 (to 640 s), 60 s lost, restart to 750 s, five left:
  // 750 + 550 = 1,300.
  int64_t failures = 0;
  EXPECT_NEAR(KnownTotalS(KnownScheduleJob({345, 370}), &failures), 1190, 1e-9);
  EXPECT_EQ(failures, 2);
  EXPECT_NEAR(KnownTotalS(KnownScheduleJob({345, 370, 700}), &failures), 1300, 1e-9);
  EXPECT_EQ(failures, 3);
}

TEST(ReservationMonteCarloKnownFailures, FailuresAfterTheEndNeverHappenAndAnEmptyScheduleHasNone) {
  int64_t failures = 0;
  EXPECT_NEAR(KnownTotalS(KnownScheduleJob({1100.5, 5000}), &failures), 1100, 1e-9);
  EXPECT_EQ(failures, 0);
  // Known and empty: no failure although the MTBF (3,600 s) would draw some.
  EXPECT_NEAR(KnownTotalS(KnownScheduleJob({}), &failures), 1100, 1e-9);
  EXPECT_EQ(failures, 0);
  ReplayInput drawn = KnownScheduleJob({});
  drawn.known_schedule = false;
  ReplayOptions options;
  EXPECT_GT(SimulateReservation(drawn, {}, options).mean_failures, 0.1);
}

TEST(ReservationMonteCarloKnownFailures, ContinuousSavesAndAPartialLastSegment) {
  // tau = 0: nothing is lost, only the restart: 1,000 + 50.
  ReplayInput in = KnownScheduleJob({400});
  in.checkpoint_interval_s = 0;
  int64_t failures = 0;
  EXPECT_NEAR(KnownTotalS(in, &failures), 1050, 1e-9);
  EXPECT_EQ(failures, 1);
  // 1,050 s of work: ten segments and a last one of 50 s + its save (failure-free 1,160 s). A failure
  // at 1,130 s, inside that last one (started at 1,100 s): 30 s lost, restart to 1,180 s, then 60 s:
  // 1,240.
  in = KnownScheduleJob({1130});
  in.work_s = 1050;
  EXPECT_NEAR(KnownTotalS(in, &failures), 1240, 1e-9);
  EXPECT_EQ(failures, 1);
}

// The launch spread: a failure 5 s after the first save (at 110 s) is 5 s of lost work when training
// starts on time and the whole first segment when it starts 10 s late (the save not yet committed).
// By hand: offset 0: 1,100 + 5 lost + 50 restart = 1,155; offset +10: the clock starts at 10, the
// failure at 115 s cuts the first segment (due at 120 s), restart to 165 s, ten segments: 1,265.
TEST(ReservationMonteCarloKnownFailures, ALaunchSpreadReplaysTheScheduleOnBothSidesOfASave) {
  ReplayInput in = KnownScheduleJob({115});
  in.start_offsets_s = {0, 10};
  ReplayOptions options;
  options.trials = 400;
  const ReservationDistribution d = SimulateReservation(in, {1160 / kDay, 1300 / kDay}, options);
  EXPECT_EQ(d.trials, 400);
  EXPECT_NE(d.note.find("over the launch spread (2 fresh, 0 resumed launches): 400 trials"), std::string::npos) << d.note;
  EXPECT_NEAR(d.p2_5_days * kDay, 1155, 1e-6);
  EXPECT_NEAR(d.p97_5_days * kDay, 1265, 1e-6);
  EXPECT_GT(d.p_within[0], 0.35);  // about half the trials take each side
  EXPECT_LT(d.p_within[0], 0.65);
  EXPECT_DOUBLE_EQ(d.p_within[1], 1);
  EXPECT_DOUBLE_EQ(d.mean_failures, 1);
  // Deterministic: the same inputs, the same bytes.
  const ReservationDistribution again = SimulateReservation(in, {1160 / kDay, 1300 / kDay}, options);
  EXPECT_EQ(again.mean_days, d.mean_days);
  EXPECT_EQ(again.p_within, d.p_within);
}

TEST(ReservationMonteCarloKnownFailures, AFailureDuringTheStartUpIsARestartAndRestartsDrawTheirOwnSpread) {
  // Training would start 20 s late; the failure at 15 s hits the start-up: restart from 15 s to 65 s,
  // nothing lost, then the failure-free 1,100 s: 1,165.
  ReplayInput in = KnownScheduleJob({15});
  in.start_offsets_s = {20, 20};
  int64_t failures = 0;
  EXPECT_NEAR(ReplayTrainingOnceS(in, 1, &failures), 1165, 1e-9);
  EXPECT_EQ(failures, 1);
  // Restarts of 50 s or 80 s (offsets 0 and +30) after the failure at 345 s: 1,165 or 1,195.
  in = KnownScheduleJob({345});
  in.restart_offsets_s = {0, 30};
  ReplayOptions options;
  options.trials = 200;
  const ReservationDistribution d = SimulateReservation(in, {1170 / kDay}, options);
  EXPECT_NEAR(d.p2_5_days * kDay, 1165, 1e-6);
  EXPECT_NEAR(d.p97_5_days * kDay, 1195, 1e-6);
  EXPECT_GT(d.p_within[0], 0.3);
  EXPECT_LT(d.p_within[0], 0.7);
}

TEST(ReservationMonteCarloKnownFailures, FixedPhasesAndBufferWrapTheReplayedPart) {
  ReplayInput in = KnownScheduleJob({345});
  in.fixed_s = 35;
  in.buffer_fraction = 0.1;
  ReplayOptions options;
  const ReservationDistribution d = SimulateReservation(in, {(1165 + 35) * 1.1 / kDay + 1e-9, (1165 + 35) * 1.1 / kDay - 1e-6}, options);
  EXPECT_NEAR(d.mean_days * kDay, (1165 + 35) * 1.1, 1e-9);
  EXPECT_DOUBLE_EQ(d.p_within[0], 1);
  EXPECT_DOUBLE_EQ(d.p_within[1], 0);
}

// Saves every K steps place the saves and evaluations at their steps. 240 steps of 0.1 s, an
// evaluation of 1 s after every 60th step, a save of 0.1 s every 30 steps, restart 2 s, one known
// failure 3.3 s into training. By hand: the first segment (steps 1-30, no evaluation) ends with its
// save at 3.1 s, before the failure, so only 0.2 s is lost; restart to 5.3 s; then steps 31-240 (21 s),
// their 4 evaluations (4 s) and 7 saves (0.7 s): 31.0 s. Spread evenly (saves every 3.5 s of work,
// the same mean), the first save would come at 3.6 s, after the failure: 34.1 s.
ReplayInput StepJob() {
  ReplayInput in;
  in.work_s = 240 * 0.1 + 4 * 1.0;
  in.checkpoint_interval_s = 30 * 0.1 + 0.5 * 1.0;
  in.checkpoint_write_s = 0.1;
  in.restart_s = 2;
  in.known_schedule = true;
  in.known_failures_s = {3.3};
  in.checkpoint_every_steps = 30;
  in.steps = 240;
  in.step_s = 0.1;
  in.eval_every_steps = 60;
  in.eval_s = 1.0;
  return in;
}

TEST(ReservationMonteCarlo, SavesEveryKStepsAreReplayedAtTheirStepsWithEvaluationsInPlace) {
  ReplayInput in = StepJob();
  int64_t failures = 0;
  EXPECT_NEAR(ReplayTrainingOnceS(in, 1, &failures), 31.0, 1e-9);
  EXPECT_EQ(failures, 1);
  ReplayInput spread = in;
  spread.checkpoint_every_steps = 0;
  EXPECT_NEAR(ReplayTrainingOnceS(spread, 1, &failures), 34.1, 1e-9);
  // A failure inside the second segment (steps 31-60, the evaluation after step 60, the save: 3.1 to
  // 7.2 s) loses 3.9 s; after the restart at 9.0 s: steps 31-240 (21 s), 4 evaluations, 7 saves = 25.7 s.
  in.known_failures_s = {7.0};
  EXPECT_NEAR(ReplayTrainingOnceS(in, 1, &failures), 9.0 + 25.7, 1e-9);
  // No failure: the work and one save per segment, however the segments are laid out.
  in.known_failures_s.clear();
  spread.known_failures_s.clear();
  EXPECT_NEAR(ReplayTrainingOnceS(in, 1, &failures), 28.0 + 8 * 0.1, 1e-9);
  EXPECT_NEAR(ReplayTrainingOnceS(spread, 1, &failures), 28.0 + 8 * 0.1, 1e-9);
  EXPECT_EQ(failures, 0);
  // A last, shorter segment: 100 steps saved every 30 -> segments of 30, 30, 30 and 10 steps.
  in.steps = 100;
  in.eval_every_steps = 0;
  in.work_s = 10;
  EXPECT_NEAR(ReplayTrainingOnceS(in, 1, &failures), 10 + 4 * 0.1, 1e-9);
  in.known_failures_s = {9.5};  // inside the last segment (9.3 .. 10.4): loses 0.2 s
  EXPECT_NEAR(ReplayTrainingOnceS(in, 1, &failures), 9.5 + 2 + 1.0 + 0.1, 1e-9);
}

// Without evaluations and with K dividing the steps, saves by step and by time are the same
// segments: drawn failures give the same trials.
TEST(ReservationMonteCarlo, StepSavesWithoutEvaluationsEqualTimeSavesForDrawnFailures) {
  ReplayInput steps = StepJob();
  steps.known_schedule = false;
  steps.known_failures_s.clear();
  steps.eval_every_steps = 0;
  steps.work_s = 24;
  steps.checkpoint_interval_s = 3;
  steps.job_mtbf_s = 10;
  ReplayInput time = steps;
  time.checkpoint_every_steps = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    int64_t fs = 0, ft = 0;
    EXPECT_NEAR(ReplayTrainingOnceS(steps, seed, &fs), ReplayTrainingOnceS(time, seed, &ft), 1e-9) << seed;
    EXPECT_EQ(fs, ft) << seed;
  }
}

}  // namespace
}  // namespace simreplay::plan
