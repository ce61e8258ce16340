// Self-managed webhook certificates (extender/webhook/webhook_certs.h): what OpenSSL makes, and the
// rotation rule over a certificate's life, CA renewal included.
#include "extender/webhook/webhook_certs.h"

#include <gtest/gtest.h>

#include "extender/webhook/webhook_cert_rotator.h"

namespace phalanx::extender {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

const SystemTime kT0 = std::chrono::system_clock::from_time_t(1'900'000'000);  // 2030

RotationPolicy Policy() {
  RotationPolicy p;
  p.dns_names = ServiceDnsNames("phalanx-scheduler", "phalanx-system");
  p.cert_validity = hours(24 * 10);
  p.ca_validity = hours(24 * 100);
  p.renew_before = hours(24 * 3);
  return p;
}

WebhookCertMaterial Fresh(SystemTime now) {
  auto plan = PlanRotation({}, false, now, Policy());
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan->next;
}

TEST(WebhookCertsTest, MakesACaAndAServingCertificateForTheServiceNames) {
  const RotationPolicy policy = Policy();
  auto ca = MakeCa("test-ca", kT0, policy.ca_validity);
  ASSERT_TRUE(ca.ok()) << ca.status().message();
  auto serving = IssueServingCert(*ca, policy.dns_names, kT0, policy.cert_validity);
  ASSERT_TRUE(serving.ok()) << serving.status().message();
  auto facts = InspectCert(serving->cert);
  ASSERT_TRUE(facts.ok());
  EXPECT_FALSE(facts->is_ca);
  EXPECT_EQ(facts->dns_names, policy.dns_names);
  EXPECT_EQ(facts->dns_names.front(), "phalanx-scheduler.phalanx-system.svc");  // what kube-apiserver verifies
  EXPECT_EQ(facts->not_after, kT0 + policy.cert_validity);
  EXPECT_LT(facts->not_before, kT0);  // backdated for clock skew
  EXPECT_TRUE(SignedBy(serving->cert, ca->cert));
  EXPECT_TRUE(KeyMatches(serving->cert, serving->key));
  EXPECT_FALSE(KeyMatches(serving->cert, ca->key));
  auto other = MakeCa("other-ca", kT0, policy.ca_validity);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(SignedBy(serving->cert, other->cert));
  EXPECT_TRUE(InspectCert(ca->cert)->is_ca);
  // A serving certificate never outlives its CA.
  auto late = IssueServingCert(*ca, policy.dns_names, kT0 + policy.ca_validity - hours(1), policy.cert_validity);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(InspectCert(late->cert)->not_after, InspectCert(ca->cert)->not_after);
  EXPECT_FALSE(InspectCert("not a certificate").ok());
  EXPECT_EQ(SplitPemBundle(ca->cert + "junk\n" + other->cert).size(), 2u);
}

TEST(WebhookCertsTest, AnEmptySecretGetsEverythingAndAGoodOneIsLeftAlone) {
  const WebhookCertMaterial m = Fresh(kT0);
  EXPECT_FALSE(m.signer.cert.empty());
  EXPECT_EQ(SplitPemBundle(m.ca_bundle), std::vector<std::string>{m.signer.cert});
  EXPECT_TRUE(SignedBy(m.serving.cert, m.signer.cert));
  for (bool published : {false, true}) {
    auto again = PlanRotation(m, published, kT0 + hours(24), Policy());
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->reasons.empty());
    EXPECT_EQ(again->next, m);
  }
}

TEST(WebhookCertsTest, TheServingCertificateIsRenewedBeforeItExpires) {
  const WebhookCertMaterial m = Fresh(kT0);
  // 10-day certificate, renewed 3 days before: not at day 6, at day 7.5.
  EXPECT_TRUE(PlanRotation(m, true, kT0 + hours(24 * 6), Policy())->reasons.empty());
  auto plan = PlanRotation(m, true, kT0 + hours(180), Policy());
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->reasons.empty());
  EXPECT_NE(plan->next.serving, m.serving);
  EXPECT_EQ(plan->next.signer, m.signer);  // the CA stays: nothing to publish
  EXPECT_EQ(plan->next.ca_bundle, m.ca_bundle);
  EXPECT_EQ(InspectCert(plan->next.serving.cert)->not_after, kT0 + hours(180) + Policy().cert_validity);
}

// The overlap: a new CA joins the bundle next to the old one; the serving certificate moves to
// the new CA only once the bundle is published; the old CA leaves the bundle when it expires.
TEST(WebhookCertsTest, CaRotationKeepsTheOldCaTrustedUntilItExpires) {
  // A serving certificate renewed at day 93 runs to the CA's end (day 100).
  const WebhookCertMaterial m = PlanRotation(Fresh(kT0), true, kT0 + hours(24 * 93), Policy())->next;
  ASSERT_EQ(InspectCert(m.serving.cert)->not_after, kT0 + Policy().ca_validity);
  const SystemTime due = kT0 + Policy().ca_validity - hours(24 * 2);  // within renew-before of the CA's end
  auto step1 = PlanRotation(m, true, due, Policy());
  ASSERT_TRUE(step1.ok());
  const WebhookCertMaterial& a = step1->next;
  EXPECT_NE(a.signer, m.signer);
  EXPECT_EQ(SplitPemBundle(a.ca_bundle), (std::vector<std::string>{a.signer.cert, m.signer.cert}));
  // The old serving pair keeps serving (it verifies against the bundle's old CA) ...
  EXPECT_TRUE(SignedBy(a.serving.cert, m.signer.cert));
  // ... while the configuration does not trust the new CA yet.
  auto waiting = PlanRotation(a, false, due, Policy());
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->next.serving, a.serving);
  auto step2 = PlanRotation(a, true, due, Policy());
  ASSERT_TRUE(step2.ok());
  const WebhookCertMaterial& b = step2->next;
  EXPECT_TRUE(SignedBy(b.serving.cert, a.signer.cert));
  EXPECT_EQ(SplitPemBundle(b.ca_bundle).size(), 2u);
  // After the old CA's end, it leaves the bundle.
  auto step3 = PlanRotation(b, true, kT0 + Policy().ca_validity + hours(2), Policy());
  ASSERT_TRUE(step3.ok());
  EXPECT_EQ(SplitPemBundle(step3->next.ca_bundle), std::vector<std::string>{a.signer.cert});
}

TEST(WebhookCertsTest, ABrokenServingPairIsReplacedAtOnce) {
  WebhookCertMaterial m = Fresh(kT0);
  WebhookCertMaterial swapped = m;
  swapped.serving.key = m.signer.key;  // key of another certificate
  auto plan = PlanRotation(swapped, false, kT0, Policy());
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(KeyMatches(plan->next.serving.cert, plan->next.serving.key));
  // Other DNS names (the Service was renamed): replaced too.
  RotationPolicy renamed = Policy();
  renamed.dns_names = ServiceDnsNames("other", "phalanx-system");
  auto moved = PlanRotation(m, false, kT0, renamed);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(InspectCert(moved->next.serving.cert)->dns_names, renamed.dns_names);
}

TEST(WebhookCertsTest, PolicyAndDurationsAreCheckedWithTheFlagNamed) {
  EXPECT_TRUE(ValidateRotationPolicy(Policy()).ok());
  RotationPolicy p = Policy();
  p.renew_before = p.cert_validity;
  Status st = ValidateRotationPolicy(p);
  EXPECT_NE(st.message().find("--webhook-cert-renew-before"), std::string::npos) << st.message();
  p = Policy();
  p.cert_validity = p.ca_validity + hours(1);
  st = ValidateRotationPolicy(p);
  EXPECT_NE(st.message().find("--webhook-cert-validity"), std::string::npos) << st.message();
  EXPECT_EQ(*ParseCertDuration("90s"), seconds(90));
  EXPECT_EQ(*ParseCertDuration("720h"), hours(720));
  EXPECT_EQ(*ParseCertDuration("365d"), hours(24 * 365));
  for (const char* bad : {"", "0d", "-1h", "1y", "1.5h", "h", "10"}) EXPECT_FALSE(ParseCertDuration(bad).ok()) << bad;
  auto flags = WebhookCertOptionsFromFlags("phalanx-system/certs", "cfg", "svc", ::testing::TempDir() + "/whc", "10d",
                                           "100d", "20d");
  ASSERT_FALSE(flags.ok());
  EXPECT_NE(flags.status().message().find("--webhook-cert-renew-before"), std::string::npos);
  flags = WebhookCertOptionsFromFlags("certs", "cfg", "svc", "/tmp", "10d", "100d", "1d");
  ASSERT_FALSE(flags.ok());
  EXPECT_NE(flags.status().message().find("--webhook-cert-secret"), std::string::npos);
  flags = WebhookCertOptionsFromFlags("", "", "", "/tmp", "10d", "100d", "1d");
  ASSERT_TRUE(flags.ok());
  EXPECT_FALSE(flags->has_value());
}

}  // namespace
}  // namespace phalanx::extender
