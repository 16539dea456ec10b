#include "remote/sigv4.hpp"

#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include <fmt/format.h>

#include "store/hash.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

std::string hmac(std::string_view key, std::string_view data) {
    unsigned char out[SHA256_DIGEST_LENGTH];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &length);
    return std::string(reinterpret_cast<const char*>(out), length);
}

std::string hex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out += kDigits[c >> 4];
        out += kDigits[c & 15];
    }
    return out;
}

// Lower-case names in order; the values of a name given twice joined by ','.
std::map<std::string, std::string> canonical_headers(const SigV4Request& request) {
    std::map<std::string, std::string> headers;
    for (const auto& [name, value] : request.headers) {
        std::string& slot = headers[lower_case(name)];
        slot += (slot.empty() ? "" : ",") + fold_spaces(value);
    }
    return headers;
}

std::string date_of(const std::string& amz_date) {
    return amz_date.substr(0, 8);
}

std::string scope_text(const std::string& date, const SigV4Scope& scope) {
    return fmt::format("{}/{}/{}/aws4_request", date_of(date), scope.region, scope.service);
}

}  // namespace

std::string amz_date(std::chrono::system_clock::time_point when) {
    std::time_t t = std::chrono::system_clock::to_time_t(when);
    std::tm utc{};
    ::gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
    return text;
}

std::string uri_encode(std::string_view text, bool keep_slash) {
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (c == '/' && keep_slash))
            out += static_cast<char>(c);
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

std::string sigv4_signed_headers(const SigV4Request& request) {
    std::string out;
    for (const auto& [name, value] : canonical_headers(request))
        out += (out.empty() ? "" : ";") + name;
    return out;
}

std::string sigv4_canonical_request(const SigV4Request& request) {
    std::string headers;
    for (const auto& [name, value] : canonical_headers(request))
        headers += name + ":" + value + "\n";
    return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, request.canonical_uri,
                       request.canonical_query, headers, sigv4_signed_headers(request),
                       request.payload_sha256);
}

std::string sigv4_string_to_sign(const std::string& canonical_request, const std::string& date,
                                 const SigV4Scope& scope) {
    return fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", date, scope_text(date, scope),
                       sha256_hex(canonical_request));
}

std::string sigv4_signature(const std::string& secret_access_key, const std::string& date,
                            const SigV4Scope& scope, const std::string& string_to_sign) {
    std::string key = hmac("AWS4" + secret_access_key, date_of(date));
    key = hmac(key, scope.region);
    key = hmac(key, scope.service);
    key = hmac(key, "aws4_request");
    return hex(hmac(key, string_to_sign));
}

std::string sigv4_authorization(const AwsCredentials& credentials, const std::string& date,
                                const SigV4Scope& scope, const SigV4Request& request) {
    std::string to_sign = sigv4_string_to_sign(sigv4_canonical_request(request), date, scope);
    return fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                       credentials.access_key_id, scope_text(date, scope),
                       sigv4_signed_headers(request),
                       sigv4_signature(credentials.secret_access_key, date, scope, to_sign));
}

}  // namespace bekc
