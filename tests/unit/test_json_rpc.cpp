// Unit tests of core/json_rpc: parsing, classification, error codes and serialization round trips.
#include "protocol/json_rpc.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <climits>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>

namespace mcpmux {
namespace {

// Parses `line` and expects a well-formed message of `kind`.
message expect_message(std::string_view line, message_kind kind) {
  message_parser p;
  auto r = p.parse(line);
  if (auto* e = r.if_error()) {
    ADD_FAILURE() << "unexpected error " << e->code << " \"" << e->message << "\" for " << line;
    return message{kind, {}};
  }
  auto m = (std::move(r)).value();
  EXPECT_EQ(m.kind, kind) << line;
  return m;
}

// A success response kept as received, as rpc_peer keeps one for relay_reply.
message raw_reply(std::string line) {
  message_parser p;
  auto span = p.scan_response(line);
  EXPECT_TRUE(span) << line;
  message m{message_kind::response, {}};
  if (!span) return m;
  m.raw = std::move(line);
  m.raw_id_pos = span->id_pos;
  m.raw_id_len = span->id_len;
  return m;
}

// Parses `line` and expects an error with `code`.
rpc_error expect_error(std::string_view line, int code) {
  message_parser p;
  auto r = p.parse(line);
  if (!!r.ok()) {
    ADD_FAILURE() << "expected error " << code << " for " << line;
    return {};
  }
  auto e = (std::move(r)).error();
  EXPECT_EQ(e.code, code) << e.message << " for " << line;
  EXPECT_FALSE(e.message.empty());
  return e;
}

// --- classification --------------------------------------------------------------------------

TEST(JsonRpcClassify, Request) {
  auto m = expect_message(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}})",
                          message_kind::request);
  EXPECT_EQ(m.id(), json::value(7));
  EXPECT_EQ(m.method(), "tools/call");
  EXPECT_EQ(m.params().at("name"), "x");
}

TEST(JsonRpcClassify, RequestWithoutParamsHasEmptyParams) {
  auto m = expect_message(R"({"jsonrpc":"2.0","id":"a","method":"ping"})", message_kind::request);
  EXPECT_TRUE(m.params().empty());
  EXPECT_EQ(m.id(), json::value("a"));
}

TEST(JsonRpcClassify, RequestWithArrayParams) {
  auto m = expect_message(R"({"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]})",
                          message_kind::request);
  EXPECT_TRUE(m.params().empty());  // params() only exposes object params
  EXPECT_TRUE(m.body.at("params").is_array());
}

TEST(JsonRpcClassify, Notification) {
  auto m = expect_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                          message_kind::notification);
  EXPECT_TRUE(m.id().is_null());
  EXPECT_EQ(m.method(), "notifications/initialized");
}

TEST(JsonRpcClassify, Response) {
  auto m =
      expect_message(R"({"jsonrpc":"2.0","id":3,"result":{"ok":true}})", message_kind::response);
  EXPECT_EQ(m.id(), json::value(3));
  EXPECT_EQ(m.method(), "");
  EXPECT_EQ(m.body.at("result").at("ok"), true);
}

TEST(JsonRpcClassify, ResponseWithNullResult) {
  expect_message(R"({"jsonrpc":"2.0","id":3,"result":null})", message_kind::response);
}

TEST(JsonRpcClassify, ErrorResponse) {
  auto m = expect_message(R"({"jsonrpc":"2.0","id":"r1","error":{"code":-32601,"message":"nope"}})",
                          message_kind::error_response);
  EXPECT_EQ(m.id(), json::value("r1"));
  EXPECT_EQ(m.body.at("error").at("code"), -32601);
}

TEST(JsonRpcClassify, ErrorResponseWithNullId) {
  // What a peer sends back for a line it could not parse.
  expect_message(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})",
                 message_kind::error_response);
}

TEST(JsonRpcClassify, ClassifyWithoutParsing) {
  auto r = classify(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().kind, message_kind::request);
}

// --- ids -------------------------------------------------------------------------------------

TEST(JsonRpcId, StringAndIntegerAccepted) {
  for (const char* id :
       {"0", "-5", "9223372036854775807", "18446744073709551615", R"("")", R"("x-1")"}) {
    const std::string line = std::string(R"({"jsonrpc":"2.0","method":"m","id":)") + id + "}";
    auto m = expect_message(line, message_kind::request);
    EXPECT_EQ(m.id(), json::parse(id)) << line;
  }
}

TEST(JsonRpcId, NullFloatObjectBoolArrayRejectedForRequests) {
  for (const char* id : {"null", "1.5", "1e3", R"({"a":1})", "true", "false", "[1]"}) {
    const std::string line = std::string(R"({"jsonrpc":"2.0","method":"m","id":)") + id + "}";
    auto e = expect_error(line, rpc_code::invalid_request);
    EXPECT_TRUE(e.id.is_null()) << "an invalid id is not echoed: " << line;
  }
}

TEST(JsonRpcId, ValidIdPredicate) {
  EXPECT_TRUE(valid_id(json::value(1)));
  EXPECT_TRUE(valid_id(json::value(std::uint64_t{18446744073709551615ull})));
  EXPECT_TRUE(valid_id(json::value("s")));
  EXPECT_FALSE(valid_id(json::value(nullptr)));
  EXPECT_FALSE(valid_id(json::value(1.0)));
  EXPECT_FALSE(valid_id(json::value(true)));
  EXPECT_FALSE(valid_id(json::value(json::object{})));
  EXPECT_FALSE(valid_id(json::value(json::array{})));
}

// An id's key (a session's table of calls, a cancellation's lookup) is its JSON text: 1 and "1"
// are two ids.
TEST(JsonRpcId, SerializedAsItsJsonText) {
  EXPECT_EQ(serialize_id(json::value(0)), "0");
  EXPECT_EQ(serialize_id(json::value(-42)), "-42");
  EXPECT_EQ(serialize_id(json::value(std::numeric_limits<std::int64_t>::max())),
            "9223372036854775807");
  EXPECT_EQ(serialize_id(json::value(std::numeric_limits<std::int64_t>::min())),
            "-9223372036854775808");
  EXPECT_EQ(serialize_id(json::value(std::uint64_t{18446744073709551615ull})),
            "18446744073709551615");
  EXPECT_EQ(serialize_id(json::value("1")), R"("1")");
  EXPECT_EQ(serialize_id(json::value("a\"b")), R"("a\"b")");
  EXPECT_NE(serialize_id(json::value(1)), serialize_id(json::value("1")));
}

// --- invalid requests ------------------------------------------------------------------------

TEST(JsonRpcInvalid, MissingJsonrpc) {
  auto e = expect_error(R"({"id":1,"method":"m"})", rpc_code::invalid_request);
  EXPECT_EQ(e.id, json::value(1));
}

TEST(JsonRpcInvalid, WrongJsonrpc) {
  expect_error(R"({"jsonrpc":"1.0","id":1,"method":"m"})", rpc_code::invalid_request);
  expect_error(R"({"jsonrpc":2.0,"id":1,"method":"m"})", rpc_code::invalid_request);
  expect_error(R"({"jsonrpc":null,"method":"m"})", rpc_code::invalid_request);
}

TEST(JsonRpcInvalid, BatchArrayRejected) {
  auto e = expect_error(R"([{"jsonrpc":"2.0","id":1,"method":"m"}])", rpc_code::invalid_request);
  EXPECT_TRUE(e.id.is_null());
  expect_error("[]", rpc_code::invalid_request);
}

TEST(JsonRpcInvalid, NonObjectRejected) {
  for (const char* line : {"1", R"("s")", "null", "true"})
    expect_error(line, rpc_code::invalid_request);
}

TEST(JsonRpcInvalid, ParamsNotObjectOrArray) {
  for (const char* p : {"1", R"("s")", "true", "null"}) {
    const std::string line =
        std::string(R"({"jsonrpc":"2.0","id":4,"method":"m","params":)") + p + "}";
    auto e = expect_error(line, rpc_code::invalid_request);
    EXPECT_EQ(e.id, json::value(4)) << line;
  }
  expect_error(R"({"jsonrpc":"2.0","method":"n","params":5})", rpc_code::invalid_request);
}

TEST(JsonRpcInvalid, MethodNotString) {
  auto e = expect_error(R"({"jsonrpc":"2.0","id":"q","method":5})", rpc_code::invalid_request);
  EXPECT_EQ(e.id, json::value("q"));
}

TEST(JsonRpcInvalid, ErrorWithoutCodeOrMessage) {
  auto e = expect_error(R"({"jsonrpc":"2.0","id":2,"error":{"message":"m"}})",
                        rpc_code::invalid_request);
  EXPECT_EQ(e.id, json::value(2));
  expect_error(R"({"jsonrpc":"2.0","id":2,"error":{"code":1}})", rpc_code::invalid_request);
  expect_error(R"({"jsonrpc":"2.0","id":2,"error":"bad"})", rpc_code::invalid_request);
}

TEST(JsonRpcInvalid, ResponseWithoutResultOrError) {
  auto e = expect_error(R"({"jsonrpc":"2.0","id":9})", rpc_code::invalid_request);
  EXPECT_EQ(e.id, json::value(9));
}

TEST(JsonRpcInvalid, NeitherIdNorMethod) {
  expect_error(R"({"jsonrpc":"2.0"})", rpc_code::invalid_request);
  expect_error(R"({"jsonrpc":"2.0","result":{}})", rpc_code::invalid_request);
}

TEST(JsonRpcInvalid, IdOfParseableInvalidRequestIsCarried) {
  auto e =
      expect_error(R"({"jsonrpc":"3","id":"keep-me","method":"m"})", rpc_code::invalid_request);
  EXPECT_EQ(e.id, json::value("keep-me"));
  e = expect_error(R"({"id":42,"method":"m","params":1})", rpc_code::invalid_request);
  EXPECT_EQ(e.id, json::value(42));
}

// --- parse errors ----------------------------------------------------------------------------

TEST(JsonRpcParseError, MalformedJson) {
  for (const char* line : {"", "   ", "{", R"({"jsonrpc":"2.0")", "{jsonrpc:2}", "not json",
                           R"({"a":1} trailing)", R"({"a":1}{"b":2})", R"({"a":01})"}) {
    auto e = expect_error(line, rpc_code::parse_error);
    EXPECT_TRUE(e.id.is_null()) << line;
  }
}

TEST(JsonRpcParseError, DeepNestingDoesNotCrash) {
  const std::string deep(100000, '[');
  auto e = expect_error(deep, rpc_code::parse_error);
  EXPECT_TRUE(e.id.is_null());
  const std::string deep_obj = R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":)" +
                               std::string(100000, '[') + std::string(100000, ']') + "}}";
  expect_error(deep_obj, rpc_code::parse_error);
}

TEST(JsonRpcParseError, ModerateNestingAccepted) {
  const std::string params = std::string(100, '[') + std::string(100, ']');
  expect_message(R"({"jsonrpc":"2.0","id":1,"method":"m","params":)" + params + "}",
                 message_kind::request);
}

TEST(JsonRpcParseError, InvalidUtf8) {
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\xff\"}", rpc_code::parse_error);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc3\x28\"}", rpc_code::parse_error);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}",  // UTF-16 surrogate
               rpc_code::parse_error);
  // Valid multi-byte UTF-8 passes.
  auto m = expect_message("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"caf\xc3\xa9 \xe2\x82\xac\"}",
                          message_kind::request);
  EXPECT_EQ(m.method(), "caf\xc3\xa9 \xe2\x82\xac");
}

TEST(JsonRpcParseError, ParserIsReusableAfterErrors) {
  message_parser p;
  EXPECT_TRUE(!(p.parse("{")).ok());
  EXPECT_TRUE(!(p.parse(std::string(10000, '['))).ok());
  EXPECT_TRUE(!(p.parse("[]")).ok());
  for (int i = 0; i < 3; ++i) {
    auto r = p.parse(R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"ping"})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value().id(), json::value(i));
  }
}

// --- building messages -----------------------------------------------------------------------

TEST(JsonRpcBuild, MakeResultRoundTrips) {
  const json::value result = json::parse(R"({"content":[{"type":"text","text":"a\"b\n"}]})");
  for (const json::value& id : {json::value(1), json::value("s\"q"), json::value(nullptr),
                                json::value(std::uint64_t{18446744073709551615ull})}) {
    const std::string s = make_result(id, result);
    auto m = expect_message(s, message_kind::response);
    EXPECT_EQ(m.body.at("jsonrpc"), "2.0");
    EXPECT_EQ(m.id(), id);
    EXPECT_EQ(m.body.at("result"), result);
    EXPECT_EQ(m.body.size(), 3u);
    EXPECT_EQ(s.find('\n'), std::string::npos);
  }
}

// Values are serialized through a 16 KiB scratch buffer when small and measured first when not:
// both paths, and the sizes around the boundary, give the same message.
TEST(JsonRpcBuild, MessagesAroundTheScratchBufferRoundTrip) {
  for (std::size_t size : {0u, 100u, 16 * 1024u - 40, 16 * 1024u - 1, 16 * 1024u, 16 * 1024u + 1,
                           40 * 1024u, 1024 * 1024u + 7}) {
    json::object args;
    args["text"] = std::string(size, 'a');
    const json::value params = json::object{{"name", "echo"}, {"arguments", args}};
    const std::string req = make_request(json::value(7), "tools/call", params);
    auto m = expect_message(req, message_kind::request);
    EXPECT_EQ(m.body.at("params"), params) << size;
    EXPECT_EQ(req.size(), json::serialize(m.body).size()) << size;
    auto r = expect_message(make_result(json::value(size), args), message_kind::response);
    EXPECT_EQ(r.body.at("result"), args) << size;
  }
}

TEST(JsonRpcBuild, MakeErrorRoundTrips) {
  const std::string s =
      make_error(json::value("id-1"), rpc_code::method_not_found, "Method not found: \"x\"");
  auto m = expect_message(s, message_kind::error_response);
  EXPECT_EQ(m.id(), json::value("id-1"));
  EXPECT_EQ(m.body.at("error").at("code"), rpc_code::method_not_found);
  EXPECT_EQ(m.body.at("error").at("message"), "Method not found: \"x\"");
  EXPECT_FALSE(m.body.at("error").as_object().contains("data"));
}

TEST(JsonRpcBuild, MakeErrorWithData) {
  const json::value data = json::parse(R"({"why":["a",1]})");
  auto m = expect_message(make_error(json::value(5), -32042, "fail", &data),
                          message_kind::error_response);
  EXPECT_EQ(m.body.at("error").at("data"), data);
  const json::value null_data;
  auto n = expect_message(make_error(json::value(5), -32042, "fail", &null_data),
                          message_kind::error_response);
  EXPECT_FALSE(n.body.at("error").as_object().contains("data"));
}

TEST(JsonRpcBuild, MakeErrorWithNullIdForParseErrors) {
  auto m = expect_message(make_error(nullptr, rpc_code::parse_error, "Parse error"),
                          message_kind::error_response);
  EXPECT_TRUE(m.id().is_null());
  EXPECT_TRUE(m.body.contains("id"));
}

TEST(JsonRpcBuild, MakeRequestRoundTrips) {
  const json::value params = json::parse(R"({"name":"echo","arguments":{"text":"\u00e9"}})");
  auto m =
      expect_message(make_request(json::value(12), "tools/call", params), message_kind::request);
  EXPECT_EQ(m.id(), json::value(12));
  EXPECT_EQ(m.method(), "tools/call");
  EXPECT_EQ(m.body.at("params"), params);

  auto arr =
      expect_message(make_request(json::value("x"), "m", json::array{1, 2}), message_kind::request);
  EXPECT_EQ(arr.body.at("params"), (json::array{1, 2}));
}

TEST(JsonRpcBuild, MakeRequestWithoutParams) {
  auto m = expect_message(make_request(json::value(1), "ping", nullptr), message_kind::request);
  EXPECT_FALSE(m.body.contains("params"));
}

TEST(JsonRpcBuild, MakeRequestEscapesMethod) {
  auto m =
      expect_message(make_request(json::value(1), "we\"ird\\\n", nullptr), message_kind::request);
  EXPECT_EQ(m.method(), "we\"ird\\\n");
}

// Integer ids are written without the serializer, method names as they are when nothing in them
// needs escaping: every id comes back exactly, a method with escapes or non-ASCII bytes too.
TEST(JsonRpcBuild, IdsAndMethodsComeBackExactly) {
  for (const json::value& id :
       {json::value(0), json::value(-1), json::value(INT64_MIN), json::value(INT64_MAX),
        json::parse("18446744073709551615"), json::value("s"), json::value("q\"uote")}) {
    auto m = expect_message(make_request(id, "tools/call", nullptr), message_kind::request);
    EXPECT_EQ(m.id(), id) << json::serialize(id);
    auto r = expect_message(make_result(id, json::object{}), message_kind::response);
    EXPECT_EQ(r.id(), id) << json::serialize(id);

    auto raw = raw_reply(R"({"jsonrpc":"2.0","id":1,"result":{}})");
    EXPECT_EQ(expect_message(relay_reply(id, raw), message_kind::response).id(), id);
  }
  for (std::string_view method : {"notifications/progress", "caf\xc3\xa9", "tab\there", "/"}) {
    auto m = expect_message(make_notification(method, nullptr), message_kind::notification);
    EXPECT_EQ(m.method(), method);
  }
}

TEST(JsonRpcBuild, MakeNotificationRoundTrips) {
  auto m =
      expect_message(make_notification("notifications/cancelled", json::object{{"requestId", 3}}),
                     message_kind::notification);
  EXPECT_EQ(m.method(), "notifications/cancelled");
  EXPECT_EQ(m.params().at("requestId"), 3);
  EXPECT_FALSE(m.body.contains("id"));

  auto bare = expect_message(make_notification("notifications/initialized", nullptr),
                             message_kind::notification);
  EXPECT_FALSE(bare.body.contains("params"));
}

}  // namespace
}  // namespace mcpmux

// --- strictness on what peers send (JSON-RPC 2.0 §5, §5.1) and on what we build. ----

namespace mcpmux {
namespace {

// JSON-RPC 2.0 §5: "Either the result member or error member MUST be included, but both members
// MUST NOT be included."
TEST(JsonRpcStrict, ResponseWithBothResultAndErrorRejected) {
  expect_error(R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}})",
               rpc_code::invalid_request);
}

// §5: the id of a response is a string, a number or null.
TEST(JsonRpcStrict, ResponseWithInvalidIdRejected) {
  expect_error(R"({"jsonrpc":"2.0","id":{},"result":{}})", rpc_code::invalid_request);
  expect_error(R"({"jsonrpc":"2.0","id":true,"result":{}})", rpc_code::invalid_request);
}

// §5.1: "code" MUST be an integer, "message" a string.
TEST(JsonRpcStrict, ErrorCodeAndMessageTypesChecked) {
  expect_error(R"({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}})",
               rpc_code::invalid_request);
  expect_error(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":5}})",
               rpc_code::invalid_request);
}

// A message built from bytes that are not UTF-8 (a child's stderr, a path) must still be a line
// that a strict peer, and our own parser, accept. json::serialize copies the bytes verbatim.
TEST(JsonRpcStrict, BuiltMessagesStayValidWithInvalidUtf8) {
  expect_message(make_error(json::value(1), -32000, "bad \xff byte"), message_kind::error_response);
  expect_message(make_result(json::value(1), json::value("\xc3\x28")), message_kind::response);
}

// Found by fuzz_ndjson_rpc: 1e999 parsed to an infinite double and went out as `Infinity`.
TEST(JsonRpcParse, NumbersOutOfRangeAreRefusedNotPassedOnAsInfinity) {
  message_parser p;
  for (const char* line : {
           R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"x":-1e999}}})",
           R"({"jsonrpc":"2.0","id":1,"result":{"a":[1,2,{"b":1e400}]}})",
       }) {
    auto r = p.parse(line);
    ASSERT_TRUE(!r.ok()) << line;
    EXPECT_EQ(r.error().code, rpc_code::parse_error);
  }
  EXPECT_TRUE((p.parse(R"({"jsonrpc":"2.0","id":1,"result":{"x":1e308}})")).ok());
}

// scan_response finds success responses with integer ids without building them; everything
// else is left to parse(), which says what it is.
TEST(ScanResponse, FindsTheIdOfASuccessResponse) {
  message_parser p;
  const std::string line = R"({"jsonrpc":"2.0","id":4711,"result":{"content":[{"id":1}]}})";
  auto span = p.scan_response(line);
  ASSERT_TRUE(span);
  EXPECT_EQ(span->id, 4711);
  EXPECT_EQ(line.substr(span->id_pos, span->id_len), "4711");
  // Key order and nesting do not matter; "id" keys below the top are not the id.
  const std::string reordered = R"({"result":{"id":99,"x":[1,{"id":2}]},"id":-3 ,"jsonrpc":"2.0"})";
  span = p.scan_response(reordered);
  ASSERT_TRUE(span);
  EXPECT_EQ(span->id, -3);
  EXPECT_EQ(reordered.substr(span->id_pos, span->id_len), "-3");
}

// A tool's own error is told by its result's "isError", read in the same pass: not by the
// words appearing elsewhere (in a nested object, in a text that quotes JSON, after a false).
TEST(ScanResponse, ReadsTheResultsOwnIsError) {
  message_parser p;
  const auto is_error = [&](std::string_view line) {
    auto span = p.scan_response(line);
    EXPECT_TRUE(span) << line;
    return span && span->is_error;
  };
  EXPECT_TRUE(is_error(R"({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}})"));
  EXPECT_TRUE(is_error(
      R"({"result":{"isError" : true,"content":[{"a":{"b":1}}]},"id":1,"jsonrpc":"2.0"})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})"));
  EXPECT_FALSE(is_error(
      R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"isError\":true}"}]}})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":1,"result":{"meta":{"isError":true}}})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":1,"result":{"isError":"true"}})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":1,"isError":true,"result":{}})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":1,"result":[{"isError":true}]})"));
  // Not carried from one message to the next.
  EXPECT_TRUE(is_error(R"({"jsonrpc":"2.0","id":1,"result":{"isError":true}})"));
  EXPECT_FALSE(is_error(R"({"jsonrpc":"2.0","id":2,"result":{}})"));
}

TEST(ScanResponse, LeavesEverythingElseToParse) {
  message_parser p;
  for (std::string_view line : {
           R"({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}})",  // error response
           R"({"jsonrpc":"2.0","id":1,"method":"ping"})",                    // request
           R"({"jsonrpc":"2.0","method":"notifications/progress"})",         // notification
           R"({"jsonrpc":"2.0","id":"s","result":{}})",                      // string id
           R"({"jsonrpc":"2.0","id":null,"result":{}})",                     // null id
           R"({"jsonrpc":"2.0","id":1.5,"result":{}})",                      // fractional id
           R"({"jsonrpc":"2.0","id":18446744073709551615,"result":{}})",     // beyond int64
           R"({"jsonrpc":"2.0","id":{"a":1},"result":{}})",                  // object id
           R"({"jsonrpc":"1.0","id":1,"result":{}})",                        // wrong version
           R"({"jsonrpc":2,"id":1,"result":{}})",                            // version not a string
           R"({"id":1,"result":{}})",                                        // no version
           R"({"jsonrpc":"2.0","result":{}})",                               // no id
           R"({"jsonrpc":"2.0","id":1})",                                    // no result
           R"({"jsonrpc":"2.0","id":1,"id":2,"result":{}})",                 // id twice
           R"({"jsonrpc":"2.0","id":1,"result":{},"result":{}})",            // result twice
           R"({"jsonrpc":"2.0","id":1,"result":1e999})",                     // not finite
           R"([{"jsonrpc":"2.0","id":1,"result":{}}])",                      // batch
           R"({"jsonrpc":"2.0","id":1,"result":{})",                         // truncated
           R"({"jsonrpc":"2.0","id":1,"result":{}} x)",                      // trailing bytes
           R"("just a string")",
           R"(42)",
           R"()",
       }) {
    EXPECT_FALSE(p.scan_response(line)) << line;
  }
  // The parser stays usable after every kind of stop.
  EXPECT_TRUE(p.scan_response(R"({"jsonrpc":"2.0","id":2,"result":null})"));
}

TEST(ScanResponse, RefusesInvalidUtf8LikeParse) {
  message_parser p;
  const std::string line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\xfe\"}";
  EXPECT_FALSE(p.scan_response(line));
  EXPECT_TRUE(!(p.parse(line)).ok());
}

// A plain tools/call keeps its params as received: the id and method are read, the params are
// their text, and the name and arguments are found in it.
TEST(ParseCall, KeepsAPlainCallsParamsAsText) {
  message_parser p;
  const std::string line =
      R"({"jsonrpc":"2.0","id":42,"method":"tools/call","params": {"name":"gh__search" ,)"
      R"("arguments":{"q":"a \"b\" \u00e9","n":[1,2.5,{"x":null}]}}})";
  auto r = p.parse_call(line);
  ASSERT_TRUE(r.ok());
  auto m = std::move(r).value();
  EXPECT_EQ(m.kind, message_kind::request);
  EXPECT_EQ(m.id(), json::value(42));
  EXPECT_EQ(m.method(), "tools/call");
  ASSERT_TRUE(m.unparsed);
  EXPECT_TRUE(m.params().empty());  // not parsed
  EXPECT_EQ(m.unparsed->text,
            R"({"name":"gh__search" ,"arguments":{"q":"a \"b\" \u00e9","n":[1,2.5,{"x":null}]}})");
  EXPECT_EQ(m.unparsed->tool, "gh__search");
  EXPECT_EQ(m.unparsed->arguments(), R"({"q":"a \"b\" \u00e9","n":[1,2.5,{"x":null}]})");
  // Parsed later, the params are what parse() reads; what was read of the message before stays
  // good (the session holds the method and id while it parses them).
  auto full = std::move(p.parse(line)).value();
  const auto method = m.method();
  const auto& id = m.id();
  m.parse_params();
  EXPECT_FALSE(m.unparsed);
  EXPECT_EQ(m.params(), full.params());
  EXPECT_EQ(m.id(), full.id());
  EXPECT_EQ(m.method(), full.method());
  EXPECT_EQ(method, "tools/call");
  EXPECT_EQ(id, json::value(42));
}

TEST(ParseCall, RenamesTheToolInTheText) {
  message_parser p;
  auto m =
      std::move(
          p.parse_call(
              R"({"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"a__x","arguments":[true, "y"]}})"))
          .value();
  ASSERT_TRUE(m.unparsed);
  EXPECT_EQ(m.id(), json::value("s1"));
  m.unparsed->rename("x\"1\"\n");
  EXPECT_EQ(m.unparsed->text, R"({"name":"x\"1\"\n","arguments":[true, "y"]})");
  EXPECT_EQ(m.unparsed->arguments(), R"([true, "y"])");
  EXPECT_EQ(m.unparsed->tool, "x\"1\"\n");
  // Arguments before the name keep their place.
  auto n =
      std::move(
          p.parse_call(
              R"({"params":{"arguments":7,"name":"a__x"},"method":"tools/call","id":1,"jsonrpc":"2.0"})"))
          .value();
  ASSERT_TRUE(n.unparsed);
  n.unparsed->rename("a_much_longer_name");
  EXPECT_EQ(n.unparsed->text, R"({"arguments":7,"name":"a_much_longer_name"})");
  EXPECT_EQ(n.unparsed->arguments(), "7");
  EXPECT_EQ(
      make_request_text(json::value(9), "tools/call", n.unparsed->text),
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":7,"name":"a_much_longer_name"}})");
}

// Anything but a plain call is parsed in full, exactly as parse() would, errors included.
TEST(ParseCall, LeavesEverythingElseToParse) {
  message_parser p;
  for (
      const std::string line : {
          R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a__x"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u005fx"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcpmux__search_tools"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x","_meta":{"progressToken":1}}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x","name":"b__y"}})",
          R"({"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a__x"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x"},"x":1})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":["a__x"]})",
          R"({"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a__x"}})",
          R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"a__x"}})",
          R"({"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a__x"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x","arguments":{"n":1e999}}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x","arguments":{"n":}}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x"}} x)",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
          "call\",\"params\":{\"name\":\"a\xff\"}}",
          R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x"}}])",
      }) {
    auto scanned = p.parse_call(line);
    auto full = p.parse(line);
    ASSERT_EQ(scanned.ok(), full.ok()) << line;
    if (!full.ok()) {
      EXPECT_EQ(scanned.if_error()->code, full.if_error()->code) << line;
      EXPECT_EQ(scanned.if_error()->message, full.if_error()->message) << line;
      continue;
    }
    auto m = std::move(scanned).value();
    EXPECT_FALSE(m.unparsed) << line;
    EXPECT_EQ(m.body, std::move(full).value().body) << line;
  }
}

// A raw reply is relayed with only its id rewritten: the result's bytes are untouched (no
// reserialization: 1.0 stays 1.0, key order and escapes stay as the server wrote them).
TEST(RelayReply, RewritesOnlyTheIdOfARawReply) {
  auto m = raw_reply(R"({"jsonrpc":"2.0","id":7,"result":{"b":1.0,"a":"\u00e9"}})");
  EXPECT_EQ(relay_reply(json::value("client-id-that-is-longer"), m),
            R"({"jsonrpc":"2.0","id":"client-id-that-is-longer","result":{"b":1.0,"a":"\u00e9"}})");
}

TEST(RelayReply, ReserializesAParsedReplyUnderTheNewId) {
  auto ok =
      expect_message(R"({"jsonrpc":"2.0","id":7,"result":{"x":[1,2]}})", message_kind::response);
  EXPECT_EQ(relay_reply(json::value(3), ok), R"({"jsonrpc":"2.0","id":3,"result":{"x":[1,2]}})");
  auto err = expect_message(R"({"jsonrpc":"2.0","id":7,"error":{"code":-5,"message":"no"}})",
                            message_kind::error_response);
  EXPECT_EQ(relay_reply(json::value("a"), err),
            R"({"jsonrpc":"2.0","id":"a","error":{"code":-5,"message":"no"}})");
}

// The first bytes of a line too long to keep: whose answer it was, if they tell.
TEST(ReadLineHead, TellsAnAnswersIdOrThatItIsNoAnswer) {
  using kind = line_head::kind;
  auto head = [](std::string_view text) { return read_line_head(text); };
  auto answer = head(R"({"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"xx)");
  EXPECT_EQ(answer.what, kind::answer);
  EXPECT_EQ(answer.id, 42);
  EXPECT_EQ(head(R"({"id":7,"error":{"code":1,"message":"x)").id, 7);
  // A server's own request numbers its ids as we do: an id before "method" is no answer.
  EXPECT_EQ(head(R"({"jsonrpc":"2.0","id":42,"method":"sampling/createMessage","params":{")").what,
            kind::other);
  // The id after a long result (the TypeScript SDK's order), or cut before it: cannot tell.
  EXPECT_EQ(head(R"({"result":{"content":[{"type":"text","text":"xxxx)").what, kind::unknown);
  EXPECT_EQ(head(R"({"jsonrpc":"2.0","id":4)").what, kind::unknown);              // 4, 42, 4000…?
  EXPECT_EQ(head(R"([{"jsonrpc":"2.0","id":1,"result":{)").what, kind::unknown);  // a batch
  // No answer to a request of ours.
  EXPECT_EQ(head(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"data":")").what,
            kind::other);
  EXPECT_EQ(head(R"({"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage)").what,
            kind::other);
  EXPECT_EQ(head(R"({"garbage":"xxxx)").what, kind::other);
  EXPECT_EQ(head("this is not json").what, kind::other);
  EXPECT_EQ(head(R"("a string)").what, kind::other);
}

}  // namespace
}  // namespace mcpmux
