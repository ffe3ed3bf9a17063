#pragma once
// A request body parsed as JSON. Every failure is an ApiError(400) that says where: a syntax
// error quotes the parser with its byte offset, a number that overflows a double (1e400) names
// the field that holds it.
#include <nlohmann/json.hpp>

#include <string>

namespace snapkv::server {

// The body as a JSON object.
nlohmann::json parse_json_body(const std::string& body);

}  // namespace snapkv::server
