// SigV4 signing (remote/sigv4.hpp) against AWS's published examples: the
// "Signature Version 4 test suite" (AKIDEXAMPLE, 20150830T123600Z, service
// "service") and the S3 API reference's header-signing examples
// (AKIAIOSFODNN7EXAMPLE, 20130524T000000Z, examplebucket). The inputs and
// the expected signatures are AWS's; a signer that differs in any step
// (encoding, header order, key derivation) fails here.
#include <catch2/catch.hpp>

#include <chrono>

#include "remote/sigv4.hpp"
#include "store/hash.hpp"

using namespace bekc;

namespace {

const AwsCredentials kSuiteCredentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                       std::nullopt};
const SigV4Scope kSuiteScope{"us-east-1", "service"};
const std::string kSuiteDate = "20150830T123600Z";

SigV4Request suite_request(std::string method, std::string uri, std::string query = "") {
    return {std::move(method),
            std::move(uri),
            std::move(query),
            {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", kSuiteDate}},
            std::string(kEmptySha256)};
}

std::string suite_signature(const SigV4Request& r) {
    std::string auth = sigv4_authorization(kSuiteCredentials, kSuiteDate, kSuiteScope, r);
    return auth.substr(auth.rfind('=') + 1);
}

// The S3 reference's examples use this key (with '/' where the suite's has '+').
const AwsCredentials kS3Credentials{"AKIAIOSFODNN7EXAMPLE",
                                    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", std::nullopt};
const SigV4Scope kS3Scope{"us-east-1", "s3"};
const std::string kS3Date = "20130524T000000Z";

// One published example: the string to sign (whose last line is the
// canonical request's SHA-256) and the Authorization header.
void check_example(const SigV4Request& r, const AwsCredentials& credentials,
                   const std::string& date, const SigV4Scope& scope,
                   const std::string& string_to_sign, const std::string& authorization) {
    CHECK(sigv4_string_to_sign(sigv4_canonical_request(r), date, scope) == string_to_sign);
    CHECK(sigv4_authorization(credentials, date, scope, r) == authorization);
}

}  // namespace

TEST_CASE("SigV4 test suite: get-vanilla", "[sigv4]") {
    SigV4Request r = suite_request("GET", "/");
    CHECK(sigv4_canonical_request(r) ==
          "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
          "host;x-amz-date\n"
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_example(r, kSuiteCredentials, kSuiteDate, kSuiteScope,
                  "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                  "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
                  "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                  "aws4_request, SignedHeaders=host;x-amz-date, "
                  "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST_CASE("SigV4 test suite: post-vanilla, get-vanilla-query-order-key-case, get-utf8", "[sigv4]") {
    CHECK(suite_signature(suite_request("POST", "/")) ==
          "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
    CHECK(suite_signature(suite_request("GET", "/", "Param1=value1&Param2=value2")) ==
          "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
    CHECK(uri_encode("\xe1\x88\xb4", true) == "%E1%88%B4");
    CHECK(suite_signature(suite_request("GET", "/" + uri_encode("\xe1\x88\xb4", true))) ==
          "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
}

TEST_CASE("SigV4 S3 example: GET object with a Range header", "[sigv4]") {
    SigV4Request r{"GET",
                   "/test.txt",
                   "",
                   {{"Host", "examplebucket.s3.amazonaws.com"},
                    {"Range", "bytes=0-9"},
                    {"x-amz-content-sha256", std::string(kEmptySha256)},
                    {"x-amz-date", kS3Date}},
                   std::string(kEmptySha256)};
    check_example(r, kS3Credentials, kS3Date, kS3Scope,
                  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                  "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                  "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                  "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("SigV4 S3 example: PUT object, a key with '$' and a signed payload", "[sigv4]") {
    std::string payload = sha256_hex("Welcome to Amazon S3.");
    REQUIRE(payload == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    SigV4Request r{"PUT",
                   "/" + uri_encode("test$file.text", true),
                   "",
                   {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                    {"Host", "examplebucket.s3.amazonaws.com"},
                    {"x-amz-content-sha256", payload},
                    {"x-amz-date", kS3Date},
                    {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
                   payload};
    CHECK(r.canonical_uri == "/test%24file.text");
    check_example(r, kS3Credentials, kS3Date, kS3Scope,
                  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                  "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                  "aws4_request, SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;"
                  "x-amz-storage-class, "
                  "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST_CASE("SigV4 S3 example: GET bucket with a query", "[sigv4]") {
    SigV4Request r{"GET",
                   "/",
                   "max-keys=2&prefix=J",
                   {{"Host", "examplebucket.s3.amazonaws.com"},
                    {"x-amz-content-sha256", std::string(kEmptySha256)},
                    {"x-amz-date", kS3Date}},
                   std::string(kEmptySha256)};
    std::string auth = sigv4_authorization(kS3Credentials, kS3Date, kS3Scope, r);
    CHECK(auth.ends_with(
        "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"));
}

TEST_CASE("SigV4 header values are trimmed and folded; names sorted case-insensitively",
          "[sigv4]") {
    SigV4Request a = suite_request("GET", "/");
    a.headers.push_back({"My-Header1", "  value1   with  spaces "});
    SigV4Request b = suite_request("GET", "/");
    b.headers.insert(b.headers.begin(), {"my-header1", "value1 with spaces"});
    CHECK(sigv4_canonical_request(a) == sigv4_canonical_request(b));
    CHECK(sigv4_signed_headers(a) == "host;my-header1;x-amz-date");
}

TEST_CASE("amz_date and uri_encode", "[sigv4]") {
    using namespace std::chrono;
    CHECK(amz_date(system_clock::time_point(seconds(1440938160))) == "20150830T123600Z");
    CHECK(uri_encode("a b+c/d~e", true) == "a%20b%2Bc/d~e");
    CHECK(uri_encode("a/b", false) == "a%2Fb");
}
