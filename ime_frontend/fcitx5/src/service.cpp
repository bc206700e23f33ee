// The Karukan addon's side of the engine service: starting it (D-Bus activation), holding keys
// and focus changes while it starts and replaying them in order, and every call to it.

#include "karukan.h"

#include <fcitx-utils/capabilityflags.h>

namespace fcitx {

namespace {

constexpr auto kBackoff = std::chrono::seconds(2);  // after a timeout, pass keys through this long
constexpr size_t kMaxHeld = 4096;  // held events beyond this go to the application at once
constexpr size_t kMaxComposition = 1024;  // key events of one composition kept for a new service
// The GTK/IBus input purpose and hint the service reads as "password field, learn nothing".
constexpr uint32_t kPurposeFreeForm = 0;
constexpr uint32_t kPurposePassword = 8;
constexpr uint32_t kHintPrivate = 1u << 11;

}  // namespace

dbus::Message KarukanEngine::call(const char *method) { return bus_->createMethodCall(kService, kPath, kInterface, method); }

dbus::Message KarukanEngine::busCall(const char *method) {
    return bus_->createMethodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method);
}

// --- starting the service and holding keys meanwhile ---------------------------------------

// Hold this event? True while a start is in flight; a service known to be missing is started.
bool KarukanEngine::mustHold() {
    if (!held_.empty()) {
        return true;  // not replayed yet: later events queue behind, so the order is kept
    }
    if (!starting_ && !serviceUp_ && available()) {
        startService();
    }
    return starting_;
}

// Ask the bus to start the engine service (D-Bus activation; through systemd where the unit
// is installed). The reply comes once the service owns its name, which it takes only when
// it can answer, or with an error (not activatable, failed, or not within the budget).
void KarukanEngine::startService() {
    if (starting_) {
        return;
    }
    starting_ = true;
    auto msg = busCall("StartServiceByName");
    msg << std::string(kService) << static_cast<uint32_t>(0);
    // The slot of an answered start is replaced here, never inside its own callback.
    startCall_ = msg.callAsync(startupUs_, [this](dbus::Message &reply) {
        onStartReply(reply);
        return true;
    });
    if (!startCall_) {
        starting_ = false;
    }
}

void KarukanEngine::onStartReply(dbus::Message &reply) {
    starting_ = false;
    if (reply.isError()) {
        KARUKAN_WARN() << "engine service did not start (" << reply.errorName() << "); keys pass through";
        backoffUntil_ = std::chrono::steady_clock::now() + kBackoff;
    } else {
        learnOwner();
    }
    scheduleReplay();
}

// Who owns the service name now (a synchronous call to the bus daemon, which answers at once).
void KarukanEngine::learnOwner() {
    auto msg = busCall("GetNameOwner");
    msg << std::string(kService);
    auto reply = msg.call(timeoutUs_);
    std::string owner;
    if (!reply.isError() && (reply >> owner)) {
        onOwnerChanged(owner);
    }
}

void KarukanEngine::onOwnerChanged(const std::string &newOwner) {
    if (newOwner == owner_) {
        return;  // already known (a start reply and the watcher both report a new owner)
    }
    // The service started, stopped or was replaced: every context id is stale.
    owner_ = newOwner;
    serviceUp_ = !newOwner.empty();
    ++generation_;
    contexts_.clear();
    if (serviceUp_ && !held_.empty()) {
        scheduleReplay();
    }
}

void KarukanEngine::hold(HeldEvent::Kind kind, InputContext *ic, const Key &key, bool release) {
    if (held_.size() >= kMaxHeld) {
        if (kind == HeldEvent::Kind::Key) {
            ic->forwardKey(key, release);
        }
        return;
    }
    held_.push_back(HeldEvent{kind, ic->watch(), key, release});
    if (!starting_) {
        scheduleReplay();
    }
}

// Replay from the event loop, not from inside a D-Bus callback.
void KarukanEngine::scheduleReplay() {
    if (!held_.empty()) {
        replayEvent_->setOneShot();
    }
}

// Send the held events in order; keys the engine does not handle (and all of them, when the
// service is not there) go to the application as they were typed.
void KarukanEngine::replay() {
    if (starting_) {
        return;  // the start reply replays
    }
    bool up = serviceUp_;
    while (!held_.empty()) {
        HeldEvent held = std::move(held_.front());
        held_.pop_front();
        if (!held.ic.isValid()) {
            continue;
        }
        auto *ic = held.ic.get();
        const bool password = ic->capabilityFlags().testAny(CapabilityFlag::PasswordOrSensitive);
        if (held.kind != HeldEvent::Kind::Key) {
            if (up && !password) {
                const char *method = held.kind == HeldEvent::Kind::FocusIn    ? "FocusIn"
                                     : held.kind == HeldEvent::Kind::FocusOut ? "FocusOut"
                                                                              : "Reset";
                up = simpleCall(ic, method, held.kind != HeldEvent::Kind::Reset) != Outcome::ServiceMissing;
            }
            continue;
        }
        if (up && !password) {
            WireView view;
            switch (sendKey(ic, held.key, held.release, view)) {
            case Outcome::Answered:
                apply(ic, view, true);
                if (std::get<0>(view.data())) {
                    continue;
                }
                break;
            case Outcome::ServiceMissing:
                up = false;
                break;
            case Outcome::Failed:
                break;
            }
        }
        ic->forwardKey(held.key, held.release);
    }
}

// --- calls -----------------------------------------------------------------------------------

void KarukanEngine::focusEvent(HeldEvent::Kind kind, InputContext *ic, const char *method, bool commit) {
    if (ic->capabilityFlags().testAny(CapabilityFlag::PasswordOrSensitive)) {
        return;
    }
    if (mustHold()) {
        // Held with the commit a focus-out needs on replay (nothing was shown meanwhile).
        hold(kind, ic);
        return;
    }
    if (simpleCall(ic, method, commit) == Outcome::ServiceMissing) {
        startService();
        if (starting_) {
            hold(kind, ic);
        }
    }
}

KarukanEngine::Outcome KarukanEngine::sendKey(InputContext *ic, const Key &key, bool release, WireView &view) {
    Outcome created = Outcome::Answered;
    auto *state = ensureContext(ic, &created);
    if (!state) {
        return created;
    }
    auto msg = call("ProcessKey");
    msg << state->id << static_cast<uint32_t>(key.sym()) << static_cast<uint32_t>(key.code())
        << static_cast<uint32_t>(key.states()) << release;
    const Outcome outcome = finish(ic, msg, state, view);
    if (outcome == Outcome::Answered) {
        rememberKey(state, key, release, view);
    }
    return outcome;
}

// A plain Return where the last view says what it commits: commit that now, with no round trip,
// and have the service finish the Return (learning, ending the composition) after; it handles
// that call before any later one on the context. No reply is waited for.
bool KarukanEngine::commitReturn(InputContext *ic, const Key &key) {
    if (key.sym() != FcitxKey_Return || key.states().testAny(KeyState::SimpleMask) || !available()) {
        return false;
    }
    auto *state = ic->propertyFor(&factory_);
    if (state->id == 0 || state->generation != generation_ || state->onReturn.empty()) {
        return false;
    }
    const std::string text = state->onReturn;
    WireView done;   // the Return's view: the text committed, nothing composed
    std::get<0>(done.data()) = true;
    std::get<1>(done.data()) = text;
    std::get<5>(done.data()) = -1;
    std::get<13>(done.data()) = -1;
    apply(ic, done, false);
    state->returnedLocally = true;
    auto msg = call("ReturnCommitted");
    msg << state->id << text;
    msg.send();
    return true;
}

// A handled key that leaves a composition shown belongs to it (apply() ends it on a view with
// nothing composed: committed, cancelled).
void KarukanEngine::rememberKey(KarukanState *state, const Key &key, bool release, const WireView &view) {
    if (!std::get<0>(view.data()) || !composing(view) || state->compositionTooLong) {
        return;
    }
    if (state->composition.size() >= kMaxComposition) {
        state->composition.clear();
        state->compositionTooLong = true;
        return;
    }
    state->composition.emplace_back(key, release);
}

// A new context (the service restarted) for a composition the old one had: type it again.
// Each answered key is a view reply the service counts, so this side counts it too.
void KarukanEngine::restoreComposition(InputContext *ic, KarukanState *state) {
    const auto keys = state->composition;  // a failed call below may clear it
    for (const auto &[key, release] : keys) {
        auto msg = call("ProcessKey");
        msg << state->id << static_cast<uint32_t>(key.sym()) << static_cast<uint32_t>(key.code())
            << static_cast<uint32_t>(key.states()) << release;
        WireView view;
        if (finish(ic, msg, state, view) != Outcome::Answered) {
            return;  // gone again: the caller's own call finds out and holds or passes its key
        }
    }
}

KarukanState *KarukanEngine::ensureContext(InputContext *ic, Outcome *outcome) {
    if (!available()) {
        if (outcome) {
            *outcome = Outcome::Failed;
        }
        return nullptr;
    }
    auto *state = ic->propertyFor(&factory_);
    if (state->id != 0 && state->generation == generation_) {
        return state;
    }
    auto msg = call("CreateContext");
    msg << std::string("fcitx5:") + ic->program();
    auto reply = timedCall(msg);
    uint32_t id = 0;
    if (reply.isError() || !(reply >> id) || id == 0) {
        KARUKAN_WARN() << "engine service unavailable (" << reply.errorName() << ")";
        if (outcome) {
            *outcome = lastCallMissing_ ? Outcome::ServiceMissing : Outcome::Failed;
        }
        return nullptr;
    }
    state->id = id;
    state->generation = generation_;
    readSettings();
    state->repliedSuggestions.clear();  // a new context: its first reply carries its list whole
    state->repliedCursor = -1;
    state->replies = 0;
    state->owner = reply.sender();
    contexts_[id] = ic->watch();
    if (!state->composition.empty()) {
        restoreComposition(ic, state);
        if (state->id == 0) {
            if (outcome) {
                *outcome = lastCallMissing_ ? Outcome::ServiceMissing : Outcome::Failed;
            }
            return nullptr;
        }
    }
    return state;
}

// Send a prepared call. On any failure the context is dropped (the next key starts a fresh
// one) and the panel cleared: keys that passed through meanwhile made the old composition moot.
KarukanEngine::Outcome KarukanEngine::finish(InputContext *ic, dbus::Message &msg, KarukanState *state, WireView &view) {
    auto reply = timedCall(msg);
    if (reply.isError() || !(reply >> view)) {
        KARUKAN_WARN() << "engine call failed: " << reply.errorName();
        destroyContext(state->id, state->generation);
        state->id = 0;
        clearPanel(ic);
        if (!lastCallMissing_) {
            // Slow or broken, not gone: keys go to the application now, the composition is moot.
            state->composition.clear();
        }
        return lastCallMissing_ ? Outcome::ServiceMissing : Outcome::Failed;
    }
    ++state->replies;
    state->returnedLocally = false;   // the service has finished any Return committed here
    return Outcome::Answered;
}

bool KarukanEngine::available() const { return std::chrono::steady_clock::now() >= backoffUntil_; }

bool KarukanEngine::nameHasOwner() {
    auto msg = busCall("NameHasOwner");
    msg << std::string(kService);
    auto reply = msg.call(timeoutUs_);
    bool owned = true;  // when even the bus does not answer, treat the service as slow
    if (!reply.isError()) {
        reply >> owned;
    }
    return owned;
}

dbus::Message KarukanEngine::timedCall(dbus::Message &msg) {
    const auto start = std::chrono::steady_clock::now();
    auto reply = msg.call(timeoutUs_);
    const auto waited = std::chrono::steady_clock::now() - start;
    lastCallMissing_ = false;
    if (reply.isError()) {
        // Gone (killed, crashed, stopped) or just being started by this very call: the key is
        // held for the restarted service. Owned but silent: it is slow.
        if (!nameHasOwner()) {
            lastCallMissing_ = true;
            serviceUp_ = false;
            return reply;
        }
        if (waited >= std::chrono::microseconds(timeoutUs_ * 9 / 10)) {
            // No answer in time: stop asking for a while so the application stays fluid.
            backoffUntil_ = std::chrono::steady_clock::now() + kBackoff;
            KARUKAN_WARN() << "engine service did not answer in time; keys pass through for a while";
        }
    }
    return reply;
}

KarukanEngine::Outcome KarukanEngine::simpleCall(InputContext *ic, const char *method, bool commit) {
    Outcome created = Outcome::Answered;
    auto *state = ensureContext(ic, &created);
    if (!state) {
        return created;
    }
    auto msg = call(method);
    msg << state->id;
    WireView view;
    Outcome outcome = finish(ic, msg, state, view);
    if (outcome == Outcome::Answered) {
        apply(ic, view, true, commit);
    }
    return outcome;
}

// The service's drawing settings ([ui] in its config), read once per service start; a service
// that does not tell (or cannot answer now) leaves the default, a vertical list.
void KarukanEngine::readSettings() {
    if (settingsGeneration_ == generation_) {
        return;
    }
    settingsGeneration_ = generation_;
    layout_ = CandidateLayoutHint::Vertical;
    auto msg = call("GetInfo");
    auto reply = msg.call(timeoutUs_);
    std::vector<InfoEntry> info;
    if (reply.isError() || !(reply >> info)) {
        return;
    }
    for (const auto &entry : info) {
        if (entry.key() == "candidate_layout" && entry.value() == "horizontal") {
            layout_ = CandidateLayoutHint::Horizontal;
        }
    }
}

// A field that turns sensitive: keys pass through from now on, so the service is told, and it
// commits what was being typed without learning it (that commit comes back as a ViewUpdated
// signal). fcitx5 itself switches input methods when the Password flag flips (the engine gets
// a focus-out, which commits), but not for Sensitive alone. Only contexts the service already
// knows are told; one it does not know has nothing typed.
void KarukanEngine::onCapabilityChanged(InputContext *ic, CapabilityFlags oldFlags, CapabilityFlags newFlags) {
    const bool was = oldFlags.testAny(CapabilityFlag::PasswordOrSensitive);
    const bool now = newFlags.testAny(CapabilityFlag::PasswordOrSensitive);
    auto *state = ic->propertyFor(&factory_);
    if (was == now || state->id == 0 || state->generation != generation_ || !serviceUp_) {
        return;
    }
    const uint32_t purpose = now ? kPurposePassword : kPurposeFreeForm;
    const uint32_t hints = now ? kHintPrivate : 0u;
    auto msg = call("SetContentType");
    msg << state->id << purpose << hints;
    auto reply = timedCall(msg);
    if (reply.isError() && now) {
        clearPanel(ic);  // nothing typed may stay on screen in a password field
    }
}

void KarukanEngine::onViewUpdated(dbus::Message &msg) {
    uint32_t id = 0;
    uint32_t replies = 0;
    WireView view;
    if (!(msg >> id >> replies >> view)) {
        return;
    }
    auto it = contexts_.find(id);
    if (it == contexts_.end() || !it->second.isValid()) {
        return;
    }
    auto *ic = it->second.get();
    auto *state = ic->propertyFor(&factory_);
    // Any peer on the bus may send this signal: only the service that made the context is believed.
    if (msg.sender() != state->owner || state->returnedLocally) {
        return;
    }
    // Signals that arrived while a synchronous call waited are dispatched after its reply: one
    // sent before a reply this addon has already applied would put an older text back.
    if (static_cast<int32_t>(replies - state->replies) < 0) {
        return;
    }
    if (ic->hasFocus()) {
        apply(ic, view, false);
    }
}

}  // namespace fcitx
