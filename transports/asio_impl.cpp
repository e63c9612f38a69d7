// The one translation unit that compiles Boost.Asio (with SSL) and Beast: separate compilation
// keeps every other translation unit light.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
