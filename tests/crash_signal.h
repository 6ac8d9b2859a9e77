// What a child killed by SIGSEGV is reported as. Under AddressSanitizer the SEGV is caught by ASan's
// handler, which prints its report and then aborts (abort_on_error=1 in the sanitize test preset), so
// the parent sees SIGABRT: the crash is still a crash, reported with the signal that ended it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SIMREPLAY_TESTS_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMREPLAY_TESTS_UNDER_ASAN 1
#endif
#endif

namespace simreplay::test_support {

#ifdef SIMREPLAY_TESTS_UNDER_ASAN
inline constexpr const char* kSegvReportedAs = "signal 6 (SIGABRT";
#else
inline constexpr const char* kSegvReportedAs = "signal 11 (SIGSEGV";
#endif

}  // namespace simreplay::test_support
