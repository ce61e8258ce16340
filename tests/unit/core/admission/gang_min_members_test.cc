#include "core/admission/gang_min_members.h"

#include <gtest/gtest.h>

namespace phalanx::admission {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const MonotonicTime kT0{seconds(50)};

TEST(GangMinMembersTest, AnnotationWins) {
  GangMinMembers m;
  m.Observe(3, kT0);
  EXPECT_EQ(m.MinMembers(8, kT0), 8);
}

TEST(GangMinMembersTest, WaitsTwoSecondsWithoutNewMembers) {
  GangMinMembers m;
  m.Observe(2, kT0);
  EXPECT_FALSE(m.MinMembers(std::nullopt, kT0 + milliseconds(1999)).has_value());
  // A third member at 1.5 s restarts the wait.
  m.Observe(3, kT0 + milliseconds(1500));
  EXPECT_FALSE(m.MinMembers(std::nullopt, kT0 + milliseconds(3499)).has_value());
  EXPECT_EQ(m.MinMembers(std::nullopt, kT0 + milliseconds(3500)), 3);
}

TEST(GangMinMembersTest, ShrinkingDoesNotRestartTheWait) {
  GangMinMembers m;
  m.Observe(4, kT0);
  m.Observe(3, kT0 + seconds(1));  // one member deleted
  EXPECT_EQ(m.MinMembers(std::nullopt, kT0 + seconds(2)), 3);
  EXPECT_EQ(m.max_seen(), 4);
}

TEST(GangMinMembersTest, StatelessRule) {
  EXPECT_EQ(EffectiveMinMembers(std::nullopt, 5, kT0, kT0 + seconds(2)), 5);
  EXPECT_FALSE(EffectiveMinMembers(std::nullopt, 5, kT0, kT0 + seconds(1)).has_value());
  EXPECT_FALSE(EffectiveMinMembers(std::nullopt, 0, kT0, kT0 + seconds(9)).has_value());
  EXPECT_EQ(EffectiveMinMembers(2, 5, kT0, kT0), 2);
  EXPECT_EQ(EffectiveMinMembers(std::nullopt, 5, kT0, kT0 + seconds(1), milliseconds(500)), 5);
}

}  // namespace
}  // namespace phalanx::admission
