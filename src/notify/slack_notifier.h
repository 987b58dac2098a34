// SlackNotifier: posts to a Slack incoming webhook.
//
// Body: {"text": <headline: message (step N) <chart|chart>>, "attachments": [{"color", "title",
// "title_link", "text", "fields": [...], "footer", "ts"}]}. `text` is what notifications and
// clients without attachments show; the attachment's colour is the severity's (critical red,
// warning amber, info blue) while firing and green once resolved.
#pragma once

#include <string>

#include "notify/notifier.h"

namespace trainwatch::notify {

struct SlackOptions {
  std::string url;  // the incoming-webhook URL, http:// or https://
  double timeout_seconds = 5;
};

// The JSON body SlackNotifier posts for `n`.
std::string SlackPayload(const Notification& n);

// Thread-safe.
class SlackNotifier final : public Notifier {
 public:
  explicit SlackNotifier(SlackOptions options);
  Status Send(const Notification& n) override;

 private:
  const SlackOptions options_;
};

}  // namespace trainwatch::notify
