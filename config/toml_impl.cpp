// The one translation unit that compiles toml++ (TOML_HEADER_ONLY=0 everywhere, as meson.build
// sets; its documented way to build the library into a program instead of linking it).
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
