// `simreplay probe storage http://...` delegates to python3 -m simreplay_capture.probe_http (s3:// to
// probe_s3, through boto3): a URL nobody answers is one clear error, exit 1, and no output file. (The measurement
// itself against a real nginx is capture/tests/test_object_server.py.)
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/cli_runner.h"

namespace simreplay {
namespace {

using testing::RunCli;

// A loopback port with nothing listening: bound, then closed.
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ProbeStorageHttp, UnreachableUrlIsAClearErrorAndWritesNothing) {
  const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) / "probe-http-unreachable.json";
  std::filesystem::remove(out);
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/bucket/shard-000000.tar";
  auto r = RunCli("probe storage " + url + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("probe_http: " + url), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ConnectionRefusedError"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// s3:// goes through boto3 (simreplay_capture.probe_s3): an endpoint nobody answers is the same one line.
TEST(ProbeStorageHttp, UnreachableS3EndpointIsAClearErrorAndWritesNothing) {
  const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) / "probe-s3-unreachable.json";
  std::filesystem::remove(out);
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(ClosedPort());
  auto r = RunCli("probe storage s3://bucket/shard-000000.tar --endpoint-url " + endpoint +
                  " --no-sign-request --quick --out " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("probe_s3: s3://bucket/shard-000000.tar: EndpointConnectionError"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the S3 probe of s3://bucket/shard-000000.tar failed"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ProbeStorageHttp, S3OptionsOnAPathAreAUsageError) {
  auto r = RunCli("probe storage /tmp --endpoint-url http://127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("apply to s3:// URLs only"), std::string::npos) << r.output;
}

TEST(ProbeStorageHttp, NotAUrlIsStillADirectory) {
  auto r = RunCli("probe storage /nonexistent/simreplay-probe-dir --quick");
  EXPECT_EQ(r.exit_code, 3) << r.output;
}

}  // namespace
}  // namespace simreplay
