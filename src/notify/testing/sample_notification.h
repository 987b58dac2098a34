// A fully populated Notification for tests.
#pragma once

#include "notify/notification.h"

namespace trainwatch::notify::test {

inline Notification SampleNotification(std::string alert_id = "42", std::string status = "firing") {
  Notification n;
  n.alert_id = std::move(alert_id);
  n.status = std::move(status);
  n.project = "vision-resnet";
  n.run = "run-7";
  n.kind = "grad_explosion";
  n.name = "grad_explosion";
  n.metric = "grad_norm";
  n.severity = "critical";
  n.message = "grad_norm 812 is 40x its running median";
  n.step = 1200;
  n.value = 40.25;
  n.time = 1767225600.5;
  n.starts_at = 1767225601.25;
  n.ends_at = n.status == "resolved" ? 1767225901.75 : 0;
  n.labels = {{"team", "vision"}};
  n.annotations = {{"runbook", "https://wiki.example.com/grad"}};
  n.chart_url = "http://127.0.0.1:8080/runs/vision-resnet/run-7?metric=grad_norm&step=1200";
  n.idempotency_key =
      IdempotencyKey(IncidentId("vision-resnet\x1frun-7\x1fgrad_explosion", 1200), n.status);
  return n;
}

}  // namespace trainwatch::notify::test
