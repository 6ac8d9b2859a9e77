# Turns models/accelerator_catalogue.json into a C++ source holding it as a string, so the binary
# carries its catalogue (models/accelerator_catalogue.h). Run by CMake: -DIN=json -DOUT=cc -P this.
file(READ ${IN} content)
file(WRITE ${OUT}.tmp
  "// Generated from models/accelerator_catalogue.json by models/accelerator_catalogue.cmake: do not edit.\n"
  "namespace simreplay::models {\n"
  "extern const char kAcceleratorCatalogueJson[];\n"
  "const char kAcceleratorCatalogueJson[] = R\"SIMREPLAY_JSON(${content})SIMREPLAY_JSON\";\n"
  "}  // namespace simreplay::models\n")
file(RENAME ${OUT}.tmp ${OUT})
