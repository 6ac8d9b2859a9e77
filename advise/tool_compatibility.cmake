# Turns advise/tool_compatibility.json into a C++ source holding it as a string, so the binary carries
# its dated table (advise/tool_compatibility.h). Run by CMake: -DIN=json -DOUT=cc -P this.
file(READ ${IN} content)
file(WRITE ${OUT}.tmp
  "// Generated from advise/tool_compatibility.json by advise/tool_compatibility.cmake: do not edit.\n"
  "namespace simreplay::advise {\n"
  "extern const char kToolCompatibilityJson[];\n"
  "const char kToolCompatibilityJson[] = R\"SIMREPLAY_JSON(${content})SIMREPLAY_JSON\";\n"
  "}  // namespace simreplay::advise\n")
file(RENAME ${OUT}.tmp ${OUT})
