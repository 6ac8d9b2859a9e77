// RunIsolated: each job in a forked child; results in job order whatever the parallelism; a child's
// error keeps its kind across the fork; crashes, exits without a result and time-outs are failures
// that say why while the other jobs complete; on_result can stop the run.
#include "sim/isolated_run.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/crash_signal.h"

namespace simreplay::sim {
namespace {

TEST(IsolatedRun, ResultsComeBackInJobOrderWhateverTheParallelism) {
  std::vector<IsolatedJob> jobs;
  for (int i = 0; i < 9; ++i) {
    // Later jobs finish first: job i sleeps (9 - i) ms.
    jobs.push_back([i]() -> Result<std::string> {
      ::usleep(static_cast<useconds_t>((9 - i) * 1000));
      return std::to_string(i * i);
    });
  }
  for (int parallel : {1, 2, 4, 9, 32}) {
    auto results = RunIsolated(jobs, parallel);
    ASSERT_EQ(results.size(), 9u);
    for (int i = 0; i < 9; ++i) {
      ASSERT_TRUE(results[i].ok()) << results[i].status().message();
      EXPECT_EQ(*results[i], std::to_string(i * i)) << "parallel " << parallel;
    }
  }
}

// Children alive at once share a memory budget: jobs whose estimates do not fit together run one after
// another whatever --jobs says; jobs that fit run side by side; one over the budget alone still runs.
TEST(IsolatedRun, AMemoryBudgetKeepsLargeJobsApart) {
  auto timed = []() -> Result<std::string> {
    const auto start = std::chrono::steady_clock::now().time_since_epoch().count();
    ::usleep(200 * 1000);
    const auto end = std::chrono::steady_clock::now().time_since_epoch().count();
    return std::to_string(start) + " " + std::to_string(end);
  };
  auto overlapping = [](const std::vector<Result<std::string>>& results) {
    std::vector<std::pair<long long, long long>> spans;
    for (const auto& r : results) {
      EXPECT_TRUE(r.ok()) << r.status().message();
      long long a = 0, b = 0;
      std::sscanf(r->c_str(), "%lld %lld", &a, &b);
      spans.emplace_back(a, b);
    }
    int overlaps = 0;
    for (size_t i = 0; i < spans.size(); ++i)
      for (size_t j = i + 1; j < spans.size(); ++j) overlaps += spans[i].first < spans[j].second && spans[j].first < spans[i].second;
    return overlaps;
  };
  IsolatedRunOptions options;
  options.parallel = 3;
  options.memory_budget_bytes = 10e9;
  options.job_bytes = {6e9, 6e9, 12e9};  // no two fit together; the third alone exceeds the budget
  EXPECT_EQ(overlapping(RunIsolated({timed, timed, timed}, options)), 0);
  options.job_bytes = {3e9, 3e9, 3e9};  // all three fit together
  EXPECT_EQ(overlapping(RunIsolated({timed, timed, timed}, options)), 3);
}

TEST(IsolatedRun, ErrorsKeepTheirKindAcrossTheFork) {
  // Issue 15: a bad input found inside a sweep point must still exit 3, so the kind must survive.
  std::vector<IsolatedJob> jobs = {
      []() -> Result<std::string> { return Status::InvalidArgument("scenario.json:3: bad value"); },
      []() -> Result<std::string> { return Status::NotFound("trace.jsonl: missing"); },
      []() -> Result<std::string> { return Status::Corruption("trace.jsonl:9: truncated"); },
      []() -> Result<std::string> { return Status::IoError("out: disk full"); },
      []() -> Result<std::string> { return Status::Internal("engine failure"); },
      []() -> Result<std::string> { throw std::runtime_error("thrown"); },
  };
  auto r = RunIsolated(jobs, 3);
  EXPECT_EQ(r[0].status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r[0].status().message(), "scenario.json:3: bad value");
  EXPECT_EQ(r[1].status().code(), Status::Code::kNotFound);
  EXPECT_EQ(r[2].status().code(), Status::Code::kCorruption);
  EXPECT_EQ(r[2].status().message(), "trace.jsonl:9: truncated");
  EXPECT_EQ(r[3].status().code(), Status::Code::kIoError);
  EXPECT_EQ(r[4].status().code(), Status::Code::kInternal);
  EXPECT_EQ(r[5].status().code(), Status::Code::kInternal);
  EXPECT_EQ(r[5].status().message(), "internal error: thrown");
}

TEST(IsolatedRun, CrashedChildIsAFailureThatNamesTheSignalAndTheOthersComplete) {
  std::vector<IsolatedJob> jobs = {
      []() -> Result<std::string> { return std::string("before"); },
      []() -> Result<std::string> {
        ::raise(SIGSEGV);
        return std::string("unreachable");
      },
      []() -> Result<std::string> {
        std::abort();
        return std::string("unreachable");
      },
      []() -> Result<std::string> { ::_exit(7); },
      []() -> Result<std::string> { return std::string("after"); },
  };
  auto r = RunIsolated(jobs, 2);
  ASSERT_TRUE(r[0].ok());
  EXPECT_EQ(*r[0], "before");
  ASSERT_FALSE(r[1].ok());
  EXPECT_EQ(r[1].status().code(), Status::Code::kInternal);
  EXPECT_NE(r[1].status().message().find(test_support::kSegvReportedAs), std::string::npos) << r[1].status().message();
  EXPECT_NE(r[2].status().message().find("SIGABRT"), std::string::npos) << r[2].status().message();
  EXPECT_NE(r[3].status().message().find("without a result (exit status 7)"), std::string::npos)
      << r[3].status().message();
  ASSERT_TRUE(r[4].ok());
  EXPECT_EQ(*r[4], "after");
}

TEST(IsolatedRun, ChildOverTheTimeLimitIsKilledAndReported) {
  std::vector<IsolatedJob> jobs = {
      []() -> Result<std::string> { return std::string("quick"); },
      []() -> Result<std::string> {
        ::sleep(60);  // far beyond the limit: the test would take a minute if the kill failed
        return std::string("late");
      },
      []() -> Result<std::string> { return std::string("also quick"); },
  };
  IsolatedRunOptions options;
  options.parallel = 3;
  options.timeout_s = 0.3;
  options.timeout_name = "--point-timeout";
  auto r = RunIsolated(jobs, options);
  ASSERT_TRUE(r[0].ok());
  ASSERT_TRUE(r[2].ok());
  ASSERT_FALSE(r[1].ok());
  EXPECT_EQ(r[1].status().message(), "exceeded the --point-timeout of 0.3 s and was killed");
}

TEST(IsolatedRun, OnResultReturningFalseCancelsTheRest) {
  std::vector<IsolatedJob> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back([i]() -> Result<std::string> { return std::to_string(i); });
  std::vector<size_t> seen;
  IsolatedRunOptions options;
  options.parallel = 1;  // one at a time: job 0 ends before job 1 starts
  options.on_result = [&seen](size_t job, const Result<std::string>&) {
    seen.push_back(job);
    return job < 1;  // stop after the second job
  };
  auto r = RunIsolated(jobs, options);
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1}));
  ASSERT_TRUE(r[0].ok());
  ASSERT_TRUE(r[1].ok());
  for (size_t i = 2; i < 6; ++i) {
    ASSERT_FALSE(r[i].ok()) << i;
    EXPECT_EQ(r[i].status().message(), "cancelled");
  }
}

}  // namespace
}  // namespace simreplay::sim
