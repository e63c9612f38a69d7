// The one translation unit that compiles Boost.JSON and Boost.URL, as their documentation offers
// for use without linking the shared libraries (see meson.build: a shared library costs every
// start ~1 ms here). Every other translation unit only sees their declarations.
#include <boost/json/src.hpp>
#include <boost/url/src.hpp>
