#include "notify/notifier.h"

namespace trainwatch::notify {

Notifier::~Notifier() = default;

}  // namespace trainwatch::notify
