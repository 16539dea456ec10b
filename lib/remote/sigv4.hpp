// AWS Signature Version 4 for S3 requests, computed here with OpenSSL's
// HMAC-SHA256 (the algorithm: docs.aws.amazon.com, "Signature Version 4
// signing process"). Pure: the caller gives the time, the request and the
// credentials; nothing is read or sent.
//
// Only header signing is done (no presigned URLs, no chunked payloads): a
// request carries x-amz-date, x-amz-content-sha256 (the payload's SHA-256)
// and, with temporary credentials, x-amz-security-token, all signed.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bekc {

// The SHA-256 of no bytes: a GET's payload hash.
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct AwsCredentials {
    std::string access_key_id;
    std::string secret_access_key;
    std::optional<std::string> session_token;
};

struct SigV4Scope {
    std::string region;  // "us-east-1"; R2 and GCS take "auto"
    std::string service = "s3";
};

struct SigV4Request {
    std::string method;           // "GET", "PUT"
    std::string canonical_uri;    // the path as sent, already percent-encoded
    std::string canonical_query;  // sorted "a=1&b=2", already encoded; "" for none
    // Every header to sign, by any name case; values are trimmed and their
    // inner runs of spaces folded, as the canonical form asks. Host included.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string payload_sha256;  // hex, or "UNSIGNED-PAYLOAD"
};

// "20150830T123600Z" for `when` (UTC).
std::string amz_date(std::chrono::system_clock::time_point when);

// RFC 3986 percent-encoding as SigV4 wants it: every byte but A-Z a-z 0-9
// - _ . ~ becomes %XX (upper-case hex); '/' too unless `keep_slash`.
std::string uri_encode(std::string_view text, bool keep_slash);

// The canonical request, the string to sign (given the canonical request,
// "YYYYMMDDTHHMMSSZ" and the scope), the signing key's signature of it, and
// the Authorization header's value built from them.
std::string sigv4_canonical_request(const SigV4Request& request);
std::string sigv4_signed_headers(const SigV4Request& request);
std::string sigv4_string_to_sign(const std::string& canonical_request, const std::string& date,
                                 const SigV4Scope& scope);
std::string sigv4_signature(const std::string& secret_access_key, const std::string& date,
                            const SigV4Scope& scope, const std::string& string_to_sign);
std::string sigv4_authorization(const AwsCredentials& credentials, const std::string& date,
                                const SigV4Scope& scope, const SigV4Request& request);

}  // namespace bekc
