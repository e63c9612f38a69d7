// The one translation unit that compiles Boost.Asio (separate compilation keeps every other TU light).
#include <boost/asio/impl/src.hpp>
