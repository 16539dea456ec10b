// An S3-compatible bucket as a remote cache: `s3://bucket/prefix`, the
// region and endpoint it is reached at, and the credentials that sign its
// requests (remote/sigv4.hpp). Everything is read once, before the first
// request, and a setting that cannot be used turns the remote off with a
// warning that says which and how to fix it.
//
// Settings (docs/cache.md, "S3-compatible storage"):
//   $BEKC_S3_REGION      the signing region; else $AWS_REGION,
//                        $AWS_DEFAULT_REGION, else us-east-1
//   $BEKC_S3_ENDPOINT    http(s)://host[:port] of a compatible store (MinIO,
//                        R2, GCS, Ceph); else AWS's regional endpoint
//   $BEKC_S3_PATH_STYLE  1: https://endpoint/bucket/prefix; 0:
//                        https://bucket.endpoint/prefix. The default is path
//                        style with an endpoint (or a bucket name with a
//                        '.'), virtual-hosted on AWS otherwise.
// Credentials, where AWS's tools look: $AWS_ACCESS_KEY_ID and
// $AWS_SECRET_ACCESS_KEY (with $AWS_SESSION_TOKEN), else the profile
// $AWS_PROFILE (or "default") of $AWS_SHARED_CREDENTIALS_FILE (or
// ~/.aws/credentials).
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "remote/http.hpp"
#include "remote/sigv4.hpp"
#include "util/env.hpp"

namespace bekc {

struct S3Target {
    std::string bucket;
    std::string prefix;  // no leading or trailing '/'; may be empty
    std::string region;
    std::string endpoint;  // "scheme://host[:port]"; empty: AWS
    bool path_style = false;
    AwsCredentials credentials;
    // Where the credentials came from, for messages (never their values).
    std::string credentials_from;
};

// Whether `url` names a bucket (s3://, any case).
bool is_s3_url(std::string_view url);

// The target `url` (s3://bucket[/prefix]) names, with the settings and the
// credentials from `env`; or why it cannot be used, in one line that names
// the setting or file to fix. Never holds a secret.
std::expected<S3Target, std::string> s3_target(const std::string& url, const EnvLookup& env);

// The http(s) URL of the prefix, under which the remote layout lives.
std::string s3_base_url(const S3Target& target);

// The header lines ("Name: value") of one request to `url` (one of
// s3_base_url's), signed at `now`: x-amz-date, x-amz-content-sha256,
// x-amz-security-token with a session token, `extra` (signed too) and
// Authorization.
std::vector<std::string> s3_request_headers(
    const S3Target& target, std::string_view method, const std::string& url,
    const std::string& payload_sha256,
    const std::vector<std::pair<std::string, std::string>>& extra,
    std::chrono::system_clock::time_point now);

// The headers of each request to `target`, signed when the request is made
// (a PUT's payload hashed then too).
HeaderSource s3_headers(S3Target target);

}  // namespace bekc
