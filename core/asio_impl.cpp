// The one translation unit that compiles Boost.Asio and Boost.Process v2 (separate compilation
// keeps every other translation unit light).
#include <boost/asio/impl/src.hpp>
#include <boost/process/v2/src.hpp>
