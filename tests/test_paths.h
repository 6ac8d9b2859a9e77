// The source tree's and the simreplay binary's paths for the tests. Each test binary gets one generated
// file that defines these two functions (CMakeLists.txt), and this header is force-included into every
// test source, so that no compile command carries a checkout's absolute path and a compiler cache serves
// a clone at another path (docs/reliability.md, "Build cache").
#ifndef SIMREPLAY_TESTS_TEST_PATHS_H_
#define SIMREPLAY_TESTS_TEST_PATHS_H_

namespace simreplay_test_paths {
// The absolute path of the source tree the tests were configured from; never null.
const char* SourceDir();
// The absolute path of the simreplay binary under test; never null.
const char* Binary();
}  // namespace simreplay_test_paths

#define SIMREPLAY_SOURCE_DIR (::simreplay_test_paths::SourceDir())
#define SIMREPLAY_BINARY (::simreplay_test_paths::Binary())

#endif  // SIMREPLAY_TESTS_TEST_PATHS_H_
