#include "remote/s3_target.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "store/hash.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

// A credentials file is a few hundred bytes.
constexpr uint64_t kMaxCredentialsFileBytes = 1 << 20;

std::optional<std::string> setting(const EnvLookup& env, const char* name) {
    auto v = env(name);
    if (v && v->empty()) return std::nullopt;
    return v;
}

// S3's bucket rules (3 to 63 of a-z 0-9 . -, a letter or digit at each end),
// with '_' and capitals as older buckets and some stores allow.
bool is_bucket_name(std::string_view b) {
    auto plain = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    return b.size() >= 3 && b.size() <= 63 && plain(b.front()) && plain(b.back()) &&
           std::all_of(b.begin(), b.end(),
                       [&](char c) { return plain(c) || c == '.' || c == '-' || c == '_'; });
}

bool is_region(std::string_view r) {
    return !r.empty() && r.size() <= 64 && std::all_of(r.begin(), r.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) ||
               std::isdigit(static_cast<unsigned char>(c)) || c == '-';
    });
}

// "scheme://host[:port]" without a path, user or query; a default port is
// dropped so the signed Host header is the one curl sends.
std::expected<std::string, std::string> normal_endpoint(std::string e) {
    while (!e.empty() && e.back() == '/') e.pop_back();
    std::string l = lower_case(e);
    size_t host = l.rfind("http://", 0) == 0 ? 7 : l.rfind("https://", 0) == 0 ? 8 : 0;
    if (host == 0) return std::unexpected("is not an http:// or https:// URL");
    std::string_view authority = std::string_view(e).substr(host);
    if (authority.empty() || has_control_char(authority) ||
        authority.find_first_of(" /?#@\\") != std::string_view::npos)
        return std::unexpected("must be scheme://host[:port], without a path, user or query");
    std::string scheme = l.substr(0, host);
    std::string hostport(authority);
    if ((host == 7 && hostport.ends_with(":80")) || (host == 8 && hostport.ends_with(":443")))
        hostport.erase(hostport.rfind(':'));
    return scheme + lower_case(hostport);
}

using Profile = std::map<std::string, std::string>;

// The sections of an AWS credentials file: "[name]", then "key = value"
// lines; '#' and ';' start comments.
std::expected<std::map<std::string, Profile>, std::string> parse_ini(const std::string& text,
                                                                     const std::string& shown) {
    std::map<std::string, Profile> sections;
    Profile* current = nullptr;
    size_t line_no = 0;
    for (size_t pos = 0; pos <= text.size();) {
        size_t nl = text.find('\n', pos);
        std::string_view line = std::string_view(text).substr(
            pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
        ++line_no;
        line = trim(line);
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            current = &sections[std::string(trim(line.substr(1, line.size() - 2)))];
            continue;
        }
        size_t eq = line.find('=');
        if (eq == std::string_view::npos || !current)
            return std::unexpected(
                fmt::format("{}:{}: not a '[profile]' or 'key = value' line", shown, line_no));
        (*current)[lower_case(trim(line.substr(0, eq)))] = std::string(trim(line.substr(eq + 1)));
    }
    return sections;
}

std::expected<AwsCredentials, std::string> from_profile(const EnvLookup& env, std::string& from) {
    std::string profile = setting(env, "AWS_PROFILE").value_or("default");
    auto file = setting(env, "AWS_SHARED_CREDENTIALS_FILE");
    if (!file) {
        auto home = setting(env, "HOME");
        if (!home)
            return std::unexpected(
                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                "AWS_SHARED_CREDENTIALS_FILE");
        file = *home + "/.aws/credentials";
    }
    auto text = read_file(*file, ReadOptions{kMaxCredentialsFileBytes, true});
    if (!text)
        return std::unexpected(fmt::format(
            "no S3 credentials: AWS_ACCESS_KEY_ID is not set and {} cannot be read ({}); set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or write the profile there",
            *file, text.error().message));
    auto sections = parse_ini(*text, *file);
    if (!sections) return std::unexpected(sections.error());
    auto it = sections->find(profile);
    if (it == sections->end())
        return std::unexpected(fmt::format(
            "the S3 credentials profile '{}' is not in {} (set AWS_PROFILE to one that is)",
            profile, *file));
    const Profile& p = it->second;
    for (const char* key : {"aws_access_key_id", "aws_secret_access_key"})
        if (!p.contains(key) || p.at(key).empty())
            return std::unexpected(
                fmt::format("profile '{}' in {} has no {}", profile, *file, key));
    from = fmt::format("profile '{}' in {}", profile, *file);
    AwsCredentials c{p.at("aws_access_key_id"), p.at("aws_secret_access_key"), std::nullopt};
    if (auto t = p.find("aws_session_token"); t != p.end() && !t->second.empty())
        c.session_token = t->second;
    return c;
}

std::expected<AwsCredentials, std::string> credentials(const EnvLookup& env, std::string& from) {
    auto id = setting(env, "AWS_ACCESS_KEY_ID");
    auto secret = setting(env, "AWS_SECRET_ACCESS_KEY");
    if (id.has_value() != secret.has_value())
        return std::unexpected(id ? "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
                                  : "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
    std::expected<AwsCredentials, std::string> c;
    if (id) {
        c = AwsCredentials{*id, *secret, setting(env, "AWS_SESSION_TOKEN")};
        from = "$AWS_ACCESS_KEY_ID";
    } else {
        c = from_profile(env, from);
    }
    if (!c) return c;
    // A line break would let a value add headers of its own.
    if (has_control_char(c->access_key_id) || has_control_char(c->secret_access_key) ||
        (c->session_token && has_control_char(*c->session_token)) ||
        c->access_key_id.find_first_of(" /,=") != std::string::npos)
        return std::unexpected("the S3 credentials from " + from +
                               " contain control characters, spaces or '/'");
    return c;
}

// bucket and prefix from "s3://bucket/prefix".
std::expected<void, std::string> split_url(const std::string& url, S3Target& t) {
    std::string rest = url.substr(5);
    size_t slash = rest.find('/');
    t.bucket = rest.substr(0, slash);
    std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    if (!is_bucket_name(t.bucket))
        return std::unexpected(
            fmt::format("'{}' is not a bucket name (3 to 63 letters, digits, '.', '-'): write "
                        "s3://bucket/prefix",
                        t.bucket));
    if (has_control_char(prefix) || prefix.find("//") != std::string::npos ||
        prefix.starts_with('/') || prefix.find('\\') != std::string::npos)
        return std::unexpected("the prefix of '" + url +
                               "' holds control characters, '//' or '\\'");
    for (size_t pos = 0; pos <= prefix.size() && !prefix.empty();) {
        size_t end = prefix.find('/', pos);
        std::string part = prefix.substr(pos, end == std::string::npos ? end : end - pos);
        if (part == "." || part == "..")
            return std::unexpected("the prefix of '" + url + "' holds '.' or '..'");
        pos = end == std::string::npos ? prefix.size() + 1 : end + 1;
    }
    t.prefix = prefix;
    return {};
}

std::expected<void, std::string> read_place(const EnvLookup& env, S3Target& t) {
    t.region =
        setting(env, "BEKC_S3_REGION")
            .value_or(setting(env, "AWS_REGION")
                          .value_or(setting(env, "AWS_DEFAULT_REGION").value_or("us-east-1")));
    if (!is_region(t.region))
        return std::unexpected("the S3 region '" + t.region +
                               "' is not a region name ($BEKC_S3_REGION, $AWS_REGION)");
    if (auto e = setting(env, "BEKC_S3_ENDPOINT")) {
        auto endpoint = normal_endpoint(*e);
        if (!endpoint) return std::unexpected("$BEKC_S3_ENDPOINT='" + *e + "' " + endpoint.error());
        t.endpoint = *endpoint;
    }
    t.path_style = !t.endpoint.empty() || t.bucket.find('.') != std::string::npos;
    if (auto p = setting(env, "BEKC_S3_PATH_STYLE")) {
        std::string v = lower_case(*p);
        if (v != "1" && v != "0" && v != "true" && v != "false" && v != "yes" && v != "no" &&
            v != "on" && v != "off")
            return std::unexpected("$BEKC_S3_PATH_STYLE='" + *p + "' is not 1 or 0");
        t.path_style = v == "1" || v == "true" || v == "yes" || v == "on";
    }
    return {};
}

}  // namespace

bool is_s3_url(std::string_view url) {
    return lower_case(url.substr(0, 5)) == "s3://";
}

std::expected<S3Target, std::string> s3_target(const std::string& url, const EnvLookup& env) {
    S3Target t;
    if (!is_s3_url(url)) return std::unexpected("'" + url + "' is not an s3:// URL");
    if (auto s = split_url(url, t); !s) return std::unexpected(s.error());
    if (auto p = read_place(env, t); !p) return std::unexpected(p.error());
    auto c = credentials(env, t.credentials_from);
    if (!c) return std::unexpected(c.error());
    t.credentials = std::move(*c);
    return t;
}

std::string s3_base_url(const S3Target& t) {
    std::string endpoint =
        t.endpoint.empty() ? "https://s3." + t.region + ".amazonaws.com" : t.endpoint;
    std::string base;
    if (t.path_style) {
        base = endpoint + "/" + uri_encode(t.bucket, false);
    } else {
        size_t host = endpoint.find("://") + 3;
        base = endpoint.substr(0, host) + t.bucket + "." + endpoint.substr(host);
    }
    if (!t.prefix.empty()) base += "/" + uri_encode(t.prefix, true);
    return base;
}

std::vector<std::string> s3_request_headers(
    const S3Target& t, std::string_view method, const std::string& url,
    const std::string& payload_sha256,
    const std::vector<std::pair<std::string, std::string>>& extra,
    std::chrono::system_clock::time_point now) {
    size_t host = url.find("://") + 3;
    size_t path = url.find('/', host);
    SigV4Request r;
    r.method = std::string(method);
    r.canonical_uri = path == std::string::npos ? "/" : url.substr(path);
    r.payload_sha256 = payload_sha256;
    std::string date = amz_date(now);
    r.headers = {{"host", url.substr(host, path - host)},
                 {"x-amz-date", date},
                 {"x-amz-content-sha256", payload_sha256}};
    if (t.credentials.session_token)
        r.headers.push_back({"x-amz-security-token", *t.credentials.session_token});
    r.headers.insert(r.headers.end(), extra.begin(), extra.end());
    std::vector<std::string> lines;
    for (const auto& [name, value] : r.headers)
        if (name != "host") lines.push_back(name + ": " + value);
    lines.push_back("Authorization: " +
                    sigv4_authorization(t.credentials, date, SigV4Scope{t.region, "s3"}, r));
    return lines;
}

HeaderSource s3_headers(S3Target target) {
    return [target = std::move(target)](
               const HeaderRequest& r) -> std::expected<std::vector<std::string>, Error> {
        std::string payload(kEmptySha256);
        if (r.upload) {
            auto sha = sha256_file(*r.upload);
            if (!sha) return std::unexpected(sha.error());
            payload = *sha;
        }
        return s3_request_headers(target, r.method, r.url, payload, r.extra,
                                  std::chrono::system_clock::now());
    };
}

}  // namespace bekc
