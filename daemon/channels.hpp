// The daemon's channel factory: which transport each kind of configured server gets.
#pragma once

#include "core/channel.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class oauth_accounts;
class server_sandboxes;
class write_batch;

/// Spawns stdio servers and dials Streamable HTTP and legacy SSE endpoints on `io`; an `oauth`
/// server's token comes from its account in `logins`; a stdio server starts as `sandboxes`
/// says. Children write in the loop's `batch`.
channel_factory make_channel_factory(boost::asio::io_context& io, oauth_accounts& logins,
                                     server_sandboxes& sandboxes,
                                     std::shared_ptr<write_batch> batch);

}  // namespace mcpmux
