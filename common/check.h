// SIMREPLAY_CHECK: always-on check of a programmer invariant. Never used for user input, which gets a
// Status instead. Failing aborts with the condition and its location.
#pragma once

#include <cstdio>
#include <cstdlib>

#define SIMREPLAY_CHECK(cond)                                                                \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: internal check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
