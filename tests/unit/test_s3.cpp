// The S3 remote's parts that need no store: s3:// URLs and their settings,
// where credentials come from, the URLs and signed headers of requests, what
// an S3 error body means, and the lease documents of one compile per miss.
// tests/integration/test_remote_s3.py runs the whole against moto's S3.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "../helpers/env.hpp"
#include "../helpers/temp_dir.hpp"
#include "remote/http.hpp"
#include "remote/lease.hpp"
#include "remote/remote_cache.hpp"
#include "remote/s3_target.hpp"

using namespace bekc;
using test::env_of;
using test::TempDir;
using test::write_file;

namespace {

const std::map<std::string, std::string> kKeys = {{"AWS_ACCESS_KEY_ID", "AKIDTEST"},
                                                  {"AWS_SECRET_ACCESS_KEY", "s3cr3t/k+ey"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> vars) {
    for (const auto& [k, v] : kKeys) vars.emplace(k, v);
    return vars;
}

bool mentions_secret(const std::string& text) {
    return text.find("s3cr3t") != std::string::npos;
}

}  // namespace

TEST_CASE("s3:// URLs: bucket, prefix, region and the URL requests go to", "[s3]") {
    auto t = s3_target("s3://my-bucket/team/bekc/", env_of(with({{"AWS_REGION", "eu-west-1"}})));
    REQUIRE(t);
    CHECK(t->bucket == "my-bucket");
    CHECK(t->prefix == "team/bekc");
    CHECK(t->region == "eu-west-1");
    CHECK_FALSE(t->path_style);
    CHECK(s3_base_url(*t) == "https://my-bucket.s3.eu-west-1.amazonaws.com/team/bekc");
    CHECK(t->credentials_from == "$AWS_ACCESS_KEY_ID");

    // BEKC_S3_REGION wins; no prefix is the bucket's root.
    t = s3_target("S3://my-bucket",
                  env_of(with({{"AWS_REGION", "x"}, {"BEKC_S3_REGION", "us-west-2"}})));
    REQUIRE(t);
    CHECK(s3_base_url(*t) == "https://my-bucket.s3.us-west-2.amazonaws.com");
    // The default region; a dotted bucket is addressed by path (TLS).
    t = s3_target("s3://my.bucket/p", env_of(with({})));
    REQUIRE(t);
    CHECK(s3_base_url(*t) == "https://s3.us-east-1.amazonaws.com/my.bucket/p");
}

TEST_CASE("an endpoint for a compatible store: path style, default ports dropped", "[s3]") {
    auto t =
        s3_target("s3://bkt/a b", env_of(with({{"BEKC_S3_ENDPOINT", "http://127.0.0.1:9000/"}})));
    REQUIRE(t);
    CHECK(t->path_style);
    CHECK(s3_base_url(*t) == "http://127.0.0.1:9000/bkt/a%20b");
    t = s3_target("s3://bkt/p", env_of(with({{"BEKC_S3_ENDPOINT", "HTTPS://Acct.R2.example:443"},
                                             {"BEKC_S3_PATH_STYLE", "0"}})));
    REQUIRE(t);
    CHECK(s3_base_url(*t) == "https://bkt.acct.r2.example/p");
}

TEST_CASE("unusable s3 settings say which and how to fix them, never the secret", "[s3]") {
    struct Case {
        std::string url;
        std::map<std::string, std::string> env;
        std::string says;
    };
    std::vector<Case> cases = {
        {"s3://", with({}), "is not a bucket name"},
        {"s3://a/b", with({}), "is not a bucket name"},
        {"s3://bkt/../x", with({}), "'.' or '..'"},
        {"s3://bkt//x", with({}), "'//'"},
        {"s3://bkt/x", with({{"BEKC_S3_REGION", "EU West"}}), "is not a region name"},
        {"s3://bkt/x", with({{"BEKC_S3_ENDPOINT", "ftp://h"}}), "$BEKC_S3_ENDPOINT"},
        {"s3://bkt/x", with({{"BEKC_S3_ENDPOINT", "http://user:pw@h"}}), "without a path, user"},
        {"s3://bkt/x", with({{"BEKC_S3_ENDPOINT", "http://h/path"}}), "without a path"},
        {"s3://bkt/x", with({{"BEKC_S3_PATH_STYLE", "maybe"}}), "$BEKC_S3_PATH_STYLE"},
        {"s3://bkt/x", {{"AWS_ACCESS_KEY_ID", "A"}}, "AWS_SECRET_ACCESS_KEY is not"},
        {"s3://bkt/x", {{"AWS_SECRET_ACCESS_KEY", "s3cr3t"}}, "AWS_ACCESS_KEY_ID is not"},
        {"s3://bkt/x",
         {{"AWS_ACCESS_KEY_ID", "A"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t\r\nX: 1"}},
         "control characters"},
        {"s3://bkt/x", {{"HOME", "/nonexistent-home"}}, "no S3 credentials"},
    };
    for (const auto& c : cases) {
        INFO(c.url << " " << c.says);
        auto t = s3_target(c.url, env_of(c.env));
        REQUIRE_FALSE(t);
        CHECK_THAT(t.error(), Catch::Contains(c.says));
        CHECK_FALSE(mentions_secret(t.error()));
    }
}

TEST_CASE("credentials from a profile of the shared credentials file", "[s3]") {
    TempDir tmp;
    write_file(tmp / "credentials",
               "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\n"
               "aws_secret_access_key = s3cr3t-default\n\n[ci]\n"
               "AWS_ACCESS_KEY_ID=AKIDCI\naws_secret_access_key=s3cr3t-ci\n"
               "aws_session_token = tok\n; another comment\n");
    std::string file = (tmp / "credentials").string();
    auto t = s3_target("s3://bkt/x", env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}}));
    REQUIRE(t);
    CHECK(t->credentials.access_key_id == "AKIDDEFAULT");
    CHECK_FALSE(t->credentials.session_token);
    CHECK(t->credentials_from == "profile 'default' in " + file);
    t = s3_target("s3://bkt/x",
                  env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}, {"AWS_PROFILE", "ci"}}));
    REQUIRE(t);
    CHECK(t->credentials.access_key_id == "AKIDCI");
    CHECK(t->credentials.session_token == "tok");
    // ~/.aws/credentials when no file is named.
    fs::create_directories(tmp / "home" / ".aws");
    fs::copy_file(tmp / "credentials", tmp / "home" / ".aws" / "credentials");
    t = s3_target("s3://bkt/x", env_of({{"HOME", (tmp / "home").string()}}));
    REQUIRE(t);
    CHECK(t->credentials.access_key_id == "AKIDDEFAULT");
    // The environment's keys come first.
    t = s3_target("s3://bkt/x", env_of(with({{"AWS_SHARED_CREDENTIALS_FILE", file}})));
    REQUIRE(t);
    CHECK(t->credentials.access_key_id == "AKIDTEST");

    auto missing = s3_target(
        "s3://bkt/x", env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}, {"AWS_PROFILE", "nope"}}));
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error(), Catch::Contains("profile 'nope' is not in " + file));
    write_file(tmp / "bad", "[default]\nthis line has no equals sign\n");
    auto bad =
        s3_target("s3://bkt/x", env_of({{"AWS_SHARED_CREDENTIALS_FILE", (tmp / "bad").string()}}));
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error(), Catch::Contains((tmp / "bad").string() + ":2:"));
    write_file(tmp / "half", "[default]\naws_access_key_id = A\n");
    auto half =
        s3_target("s3://bkt/x", env_of({{"AWS_SHARED_CREDENTIALS_FILE", (tmp / "half").string()}}));
    REQUIRE_FALSE(half);
    CHECK_THAT(half.error(), Catch::Contains("has no aws_secret_access_key"));
    // A FIFO is refused, never waited on.
    REQUIRE(::mkfifo((tmp / "fifo").c_str(), 0600) == 0);
    auto fifo =
        s3_target("s3://bkt/x", env_of({{"AWS_SHARED_CREDENTIALS_FILE", (tmp / "fifo").string()}}));
    REQUIRE_FALSE(fifo);
    CHECK_THAT(fifo.error(), Catch::Contains("cannot be read"));
}

TEST_CASE("a request's headers: dated, payload-hashed, token and conditions signed", "[s3]") {
    auto t = s3_target("s3://bkt/p", env_of(with({{"AWS_SESSION_TOKEN", "sess"},
                                                  {"BEKC_S3_ENDPOINT", "http://127.0.0.1:9000"}})));
    REQUIRE(t);
    auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));
    auto lines = s3_request_headers(*t, "PUT", s3_base_url(*t) + "/leases/k.0.json", "abc",
                                    {{"If-None-Match", "*"}}, when);
    auto has = [&](const std::string& l) {
        return std::find(lines.begin(), lines.end(), l) != lines.end();
    };
    CHECK(has("x-amz-date: 20150830T123600Z"));
    CHECK(has("x-amz-content-sha256: abc"));
    CHECK(has("x-amz-security-token: sess"));
    CHECK(has("If-None-Match: *"));
    REQUIRE(
        lines.back().starts_with("Authorization: AWS4-HMAC-SHA256 Credential=AKIDTEST/20150830/"
                                 "us-east-1/s3/aws4_request, SignedHeaders=host;if-none-match;"
                                 "x-amz-content-sha256;x-amz-date;x-amz-security-token, "
                                 "Signature="));
    for (const auto& l : lines) CHECK_FALSE(mentions_secret(l));
}

TEST_CASE("an S3 error body's code says what to fix; a missing bucket is not a miss", "[s3]") {
    ProcessResult ok;
    ok.status = ProcessStatus::Exited;
    ok.exit_code = 0;
    auto body = [](const std::string& code) {
        return "<?xml version=\"1.0\"?><Error><Code>" + code +
               "</Code><Message>m</Message></Error>";
    };
    CHECK(error_body_code(body("NoSuchKey")) == "NoSuchKey");
    CHECK(error_body_code("<html>502</html>") == "");
    CHECK(error_body_code("<Code>a\nb</Code>") == "");
    CHECK(interpret_curl(ok, 404, "", body("NoSuchKey")).kind == HttpResult::Kind::NotFound);
    auto bucket = interpret_curl(ok, 404, "", body("NoSuchBucket"));
    CHECK(bucket.kind == HttpResult::Kind::Failed);
    CHECK_THAT(bucket.message, Catch::Contains("the bucket does not exist"));
    auto skew = interpret_curl(ok, 403, "", body("RequestTimeTooSkewed"));
    CHECK_THAT(skew.message, Catch::Contains("clock"));
    CHECK_THAT(interpret_curl(ok, 403, "", body("SignatureDoesNotMatch")).message,
               Catch::Contains("secret access key"));
    CHECK_THAT(interpret_curl(ok, 403, "", body("InvalidAccessKeyId")).message,
               Catch::Contains("access key id"));
    CHECK(interpret_curl(ok, 412, "", "").kind == HttpResult::Kind::PreconditionFailed);
    CHECK(interpret_curl(ok, 409, "", body("ConditionalRequestConflict")).kind ==
          HttpResult::Kind::PreconditionFailed);
}

TEST_CASE("remote configuration: s3:// URLs and $BEKC_REMOTE_WAIT", "[s3]") {
    auto c = remote_config(std::string("s3://bkt/p"), false, env_of(with({})));
    REQUIRE(c);
    CHECK(c->problem.empty());
    REQUIRE(c->s3);
    CHECK(c->wait == kDefaultRemoteWait);
    c = remote_config(std::string("s3://bkt/p"), false, env_of({{"HOME", "/nonexistent"}}));
    CHECK_THAT(c->problem, Catch::Contains("no S3 credentials"));
    c = remote_config(std::string("http://h/b"), false, env_of({{"BEKC_REMOTE_WAIT", "0"}}));
    CHECK(c->problem.empty());
    CHECK(c->wait.count() == 0);
    for (std::string bad : {"-1", "3601", "5s", "x"}) {
        c = remote_config(std::string("http://h/b"), false, env_of({{"BEKC_REMOTE_WAIT", bad}}));
        CHECK_THAT(c->problem, Catch::Contains("$BEKC_REMOTE_WAIT"));
    }
}

TEST_CASE("lease documents round-trip, and anything else is refused", "[s3][lease]") {
    Lease l{Lease::State::Done, "host pid 12 #0000abcd", 1700000000, 2500};
    auto back = parse_lease(render_lease(l));
    REQUIRE(back);
    CHECK(back->state == Lease::State::Done);
    CHECK(back->owner == l.owner);
    CHECK(back->expires == l.expires);
    CHECK(back->build_ms == 2500);
    for (std::string bad :
         {"", "null", "{}", "<html>", R"({"format":1,"state":"odd","owner":"o","expires":1})",
          R"({"format":2,"state":"done","owner":"o","expires":1})",
          R"({"format":1,"state":"done","owner":"","expires":1})",
          R"({"format":1,"state":"done","owner":"a\nb","expires":1})",
          R"({"format":1,"state":"done","owner":"o","expires":"soon"})"}) {
        INFO(bad);
        CHECK_FALSE(parse_lease(bad));
    }
    CHECK(lease_owner() != lease_owner());
}

TEST_CASE("waiters poll with growing, jittered pauses, at most 3 s", "[s3][lease]") {
    CHECK(poll_pause(0, 0.0) == std::chrono::milliseconds(200));
    CHECK(poll_pause(1, 0.0) == std::chrono::milliseconds(300));
    CHECK(poll_pause(50, 0.0) == std::chrono::milliseconds(3000));
    CHECK(poll_pause(50, 1.0) == std::chrono::milliseconds(2250));
}
