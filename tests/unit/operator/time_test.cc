#include "common/time.h"

#include <gtest/gtest.h>

namespace kubedist {
namespace {

TEST(Rfc3339, FormatsAndParsesRoundTrip) {
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(parse_rfc3339("2026-12-02T17:20:47Z"), 1796232047);
  EXPECT_EQ(format_rfc3339(1796232047), "2026-12-02T17:20:47Z");
}

TEST(Rfc3339, AcceptsFractionsAndOffsets) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:10.123456Z"), 10);
  EXPECT_EQ(parse_rfc3339("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00-00:30"), 1800);
}

TEST(Rfc3339, RejectsGarbage) {
  for (const char* bad : {"", "yesterday", "2026-12-02", "2026-12-02T17:20:47", "2026-13-02T17:20:47Z",
                          "2026-12-02T17:20:47Zjunk"}) {
    EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace kubedist
