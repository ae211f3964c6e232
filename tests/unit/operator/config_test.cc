#include "kube/config.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "kube/client.h"

namespace kubedist::kube {
namespace {

// A scratch directory removed when the test ends.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kubedist-config-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string write(const std::string& name, const std::string& content) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:443
    certificate-authority: certs/ca.crt
    insecure-skip-tls-verify: true
users:
- name: dev-user
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: prod-user
  user:
    token: abc.def
- name: file-user
  user:
    tokenFile: token.txt
    client-certificate: certs/client.crt
    client-key: certs/client.key
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user}
- name: prod
  context: {cluster: prod-cluster, user: prod-user, namespace: team-a}
- name: files
  context: {cluster: prod-cluster, user: file-user}
- name: ghost
  context: {cluster: nowhere, user: dev-user}
- name: nouser
  context: {cluster: dev-cluster, user: nobody}
)";

TEST(Kubeconfig, UsesTheCurrentContextWithInlineCertificates) {
  auto cfg = parse_kubeconfig(kKubeconfig, "/nonexistent");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->ca_pem, "CA-PEM");
  EXPECT_EQ(cfg->ca_file, "");  // inline data never changes
  EXPECT_EQ(cfg->client_cert_pem, "CERT");
  EXPECT_EQ(cfg->client_key_pem, "KEY");
  EXPECT_TRUE(cfg->token.empty());
  EXPECT_FALSE(cfg->insecure_skip_verify);
  EXPECT_EQ(cfg->namespace_, "default");
}

TEST(Kubeconfig, SelectsAnExplicitContextWithATokenAndNamespace) {
  TempDir dir;
  dir.write("ca.crt", "");
  std::system(("mkdir -p " + dir.path() + "/certs && echo FILE-CA > " + dir.path() + "/certs/ca.crt").c_str());
  auto cfg = parse_kubeconfig(kKubeconfig, dir.path(), "prod");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->ca_pem, "FILE-CA\n");
  EXPECT_EQ(cfg->ca_file, dir.path() + "/certs/ca.crt");  // re-read when it changes (kube/trusted_ca.h)
  EXPECT_TRUE(cfg->insecure_skip_verify);
  EXPECT_EQ(cfg->token, "abc.def");
  EXPECT_EQ(cfg->namespace_, "team-a");
}

TEST(Kubeconfig, ResolvesFilesRelativeToTheKubeconfig) {
  TempDir dir;
  std::system(("mkdir -p " + dir.path() + "/certs").c_str());
  dir.write("certs/ca.crt", "CA");
  dir.write("certs/client.crt", "C");
  dir.write("certs/client.key", "K");
  const std::string path = dir.write("config", kKubeconfig);
  auto cfg = load_kubeconfig(path, "files");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->client_cert_pem, "C");
  EXPECT_EQ(cfg->client_key_pem, "K");
  EXPECT_EQ(cfg->token_file, dir.path() + "/token.txt");
}

TEST(Kubeconfig, RefusesBrokenConfigsWithAClearMessage) {
  struct Case {
    std::string yaml;
    std::string context;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{", "", "not valid YAML"},
      {"- a\n- b\n", "", "not a YAML mapping"},
      {"clusters: []\n", "", "no current-context"},
      {kKubeconfig, "missing", "no context \"missing\""},
      {kKubeconfig, "ghost", "unknown cluster \"nowhere\""},
      {kKubeconfig, "nouser", "unknown user \"nobody\""},
      {kKubeconfig, "files", "cannot read /nonexistent/certs/ca.crt"},
      {"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c, cluster: {}}]\n", "",
       "has no server"},
      {"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority-data: '!!!'}}]\n",
       "", "certificate-authority-data is not valid base64"},
      {"current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\nusers: [{name: u, user: {client-certificate-data: QQ==}}]\n",
       "", "needs its key"},
      {"current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\nusers: [{name: u, user: {exec: {command: aws}}}]\n",
       "", "exec and auth-provider credentials are not supported"},
  };
  for (const auto& c : cases) {
    auto cfg = parse_kubeconfig(c.yaml, "/nonexistent", c.context);
    ASSERT_FALSE(cfg.ok()) << c.message;
    EXPECT_NE(cfg.error().message.find(c.message), std::string::npos)
        << "got \"" << cfg.error().message << "\", want \"" << c.message << "\"";
  }
}

TEST(InClusterConfig, ReadsTheServiceAccountAndServiceHost) {
  TempDir dir;
  dir.write("token", "tok\n");
  dir.write("ca.crt", "CA");
  dir.write("namespace", "kubedist-system\n");
  auto cfg = in_cluster_config({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
                               dir.path());
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->ca_pem, "CA");
  EXPECT_EQ(cfg->ca_file, dir.path() + "/ca.crt");
  EXPECT_EQ(cfg->token_file, dir.path() + "/token");
  EXPECT_EQ(cfg->namespace_, "kubedist-system");
  auto v6 = in_cluster_config({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
                              dir.path());
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST(InClusterConfig, FailsOutsideAPodWithAClearMessage) {
  auto cfg = in_cluster_config({}, "/nonexistent");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  cfg = in_cluster_config({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}}, "/nonexistent");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().message.find("cannot read /nonexistent/token"), std::string::npos);
}

TEST(Base64, DecodesPaddedAndWrappedInputAndRejectsGarbage) {
  bool ok = false;
  EXPECT_EQ(base64_decode("aGVsbG8=", &ok), "hello");
  EXPECT_TRUE(ok);
  EXPECT_EQ(base64_decode("aGVs\nbG8h", &ok), "hello!");
  EXPECT_TRUE(ok);
  base64_decode("a$b", &ok);
  EXPECT_FALSE(ok);
  base64_decode("aGVsbG8=x", &ok);
  EXPECT_FALSE(ok);
}

TEST(Base64, DecodesUnpaddedInputAndRefusesPartialGroupsAndExcessPadding) {
  const struct {
    std::string in;
    bool ok;
    std::string out;
  } cases[] = {
      {"", true, ""},
      {"QQ", true, "A"},
      {"QUI", true, "AB"},
      {"QUJD", true, "ABC"},
      {"aGVsbG8", true, "hello"},
      {"QQ=", true, "A"},
      {" QUJD\r\n", true, "ABC"},
      {"a", false, ""},          // six bits: no whole byte
      {"QUJDa", false, ""},
      {"QQ===", false, ""},      // more padding than a group has
      {"Q=Q=", false, ""},       // padding inside
      {"QU\tJD", false, ""},    // not in the alphabet
  };
  for (const auto& c : cases) {
    bool ok = !c.ok;
    EXPECT_EQ(base64_decode(c.in, &ok), c.out) << c.in;
    EXPECT_EQ(ok, c.ok) << c.in;
  }
}

TEST(QueryEscape, PercentEncodesAllButUnreservedCharacters) {
  EXPECT_EQ(query_escape("kubedist.io/job-name"), "kubedist.io%2Fjob-name");
  EXPECT_EQ(query_escape("a in (x, y_z~)"), "a%20in%20%28x%2C%20y_z~%29");
  EXPECT_EQ(query_escape("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ=="), "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%3D%3D");
}

TEST(Client, RefusesUnusableCredentialsUpFront) {
  Config cfg;
  cfg.server = "https://127.0.0.1:1";
  cfg.client_cert_pem = "not a certificate";
  cfg.client_key_pem = "not a key";
  auto c = Client::create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("TLS credentials in the kube config are unusable"), std::string::npos);
  cfg = Config{};
  cfg.server = "127.0.0.1:6443";
  c = Client::create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("must start with https://"), std::string::npos);
}

TEST(ErrorFromResponse, MapsStatusCodesToKinds) {
  struct Case {
    int code;
    const char* reason;
    Error::Kind kind;
  };
  for (const auto& c : std::vector<Case>{{404, "NotFound", Error::Kind::kNotFound},
                                         {409, "AlreadyExists", Error::Kind::kAlreadyExists},
                                         {409, "Conflict", Error::Kind::kConflict},
                                         {410, "Expired", Error::Kind::kGone},
                                         {422, "Invalid", Error::Kind::kUnprocessable},
                                         {429, "TooManyRequests", Error::Kind::kRetryable},
                                         {500, "InternalError", Error::Kind::kRetryable},
                                         {503, "ServiceUnavailable", Error::Kind::kRetryable},
                                         {403, "Forbidden", Error::Kind::kForbidden},
                                         {400, "BadRequest", Error::Kind::kOther}}) {
    const Error e = error_from_response(c.code, {{"reason", c.reason}, {"message", "boom"}});
    EXPECT_EQ(e.kind, c.kind) << c.code << " " << c.reason;
    EXPECT_EQ(e.message, "boom");
    EXPECT_EQ(e.http_status, c.code);
  }
  EXPECT_EQ(error_from_response(502, nullptr).message, "HTTP 502");
}

}  // namespace
}  // namespace kubedist::kube
