// Who keeps a place on a flooded port: members in a room of their own, and among strangers the flood pushes out
// itself first.
#include "io/admission.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

using namespace std::chrono_literals;
constexpr std::uint32_t kFlood = 0x7f000063, kJoiner = 0x0a000002, kOther = 0x0a000003;
const Admission::Clock::time_point t0{};

TEST(Admission, AdmitsStrangersUpToTheirCapWithoutPushingAnyoneOut) {
  Admission a({3, 2});
  for (int fd = 10; fd < 13; ++fd) {
    const auto d = a.arrive(kFlood);
    EXPECT_TRUE(d.admit);
    EXPECT_FALSE(d.evict);
    a.add(fd, kFlood, t0 + std::chrono::seconds(fd));
  }
  EXPECT_EQ(a.strangers(), 3u);
}

TEST(Admission, AFloodPushesOutItsOwnOldestAndNeverAJoinerFromAnotherAddress) {
  Admission a({4, 2});
  a.add(10, kJoiner, t0);  // the oldest of all, waiting for its HELLO
  for (int fd = 11; fd < 14; ++fd) a.add(fd, kFlood, t0 + std::chrono::seconds(fd));
  for (int fd = 14; fd < 1000; ++fd) {
    const auto d = a.arrive(kFlood);
    ASSERT_TRUE(d.admit);
    ASSERT_TRUE(d.evict);
    ASSERT_NE(*d.evict, 10) << "the joiner was pushed out at newcomer " << fd;
    a.remove(*d.evict);
    a.add(fd, kFlood, t0 + std::chrono::seconds(fd));
  }
  EXPECT_FALSE(a.member(10));
  EXPECT_TRUE(a.promote(10)) << "the joiner spoke: a member now";
  EXPECT_EQ(a.members(), 1u);
  EXPECT_EQ(a.strangers(), 3u);
}

TEST(Admission, ANewcomerFromAQuietAddressPushesOutTheFloodsOldest) {
  Admission a({3, 1});
  a.add(10, kOther, t0);
  a.add(11, kFlood, t0 + 1s);
  a.add(12, kFlood, t0 + 2s);
  const auto d = a.arrive(kJoiner);
  EXPECT_TRUE(d.admit);
  EXPECT_EQ(d.evict, 11);
}

TEST(Admission, WhenEverySourceHoldsOneTheOldestStrangerGoes) {
  Admission a({2, 1});
  a.add(10, kOther, t0 + 5s);
  a.add(11, kFlood, t0 + 1s);
  EXPECT_EQ(a.arrive(kJoiner).evict, 11);
}

TEST(Admission, MembersKeepTheirOwnRoomAndAreNeverPushedOut) {
  Admission a({2, 2});
  a.add(10, kJoiner, t0);
  a.add(11, kOther, t0 + 1s);
  ASSERT_TRUE(a.promote(10));
  ASSERT_TRUE(a.promote(11));
  EXPECT_EQ(a.strangers(), 0u);
  for (int fd = 12; fd < 100; ++fd) {
    const auto d = a.arrive(kFlood);
    ASSERT_TRUE(d.admit);
    if (d.evict) {
      ASSERT_NE(*d.evict, 10);
      ASSERT_NE(*d.evict, 11);
      a.remove(*d.evict);
    }
    a.add(fd, kFlood, t0 + std::chrono::seconds(fd));
  }
  EXPECT_EQ(a.members(), 2u);
  EXPECT_EQ(a.strangers(), 2u);
  // The members' room is full: a third would-be member stays a stranger (the host refuses it).
  EXPECT_FALSE(a.promote(99));
  EXPECT_FALSE(a.member(99));
  a.remove(10);
  EXPECT_TRUE(a.promote(99)) << "a member that left made room";
}

TEST(Admission, ListsItsStrangersSoThatTheirInputCanBeReadBeforeAnyIsPushedOut) {
  Admission a({4, 4});
  a.add(10, kJoiner, t0);
  a.add(11, kOther, t0 + 1s);
  a.add(12, kFlood, t0 + 2s);
  ASSERT_TRUE(a.promote(11));
  EXPECT_EQ(a.stranger_fds(), (std::vector<int>{10, 12}));
  a.remove(10);
  EXPECT_EQ(a.stranger_fds(), (std::vector<int>{12}));
}

TEST(Admission, WithoutRoomForStrangersANewcomerIsRefused) {
  Admission a({0, 4});
  const auto d = a.arrive(kJoiner);
  EXPECT_FALSE(d.admit);
  EXPECT_FALSE(d.evict);
}

}  // namespace
}  // namespace kubedist::launcher
