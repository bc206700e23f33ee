// fcitx5's entry points of the Karukan addon: construction, keys, focus, candidate clicks and the
// addon factory. How keys reach the service is in service.cpp, what is drawn in panel.cpp.

#include "karukan.h"

#include <cstdlib>

#include <fcitx-utils/capabilityflags.h>
#include <fcitx-utils/dbus/matchrule.h>
#include <fcitx/addonfactory.h>

FCITX_DEFINE_LOG_CATEGORY(karukan_log, "karukan");

namespace {

constexpr uint64_t kDefaultTimeoutUs = 250000;  // a key must never hang the application long
// How long keys typed while the engine service starts are held before they go to the application
// raw. The service answers in about 0.4 s on a desktop (it loads the dictionary before it takes
// its bus name); the budget leaves room for a busy machine at login.
constexpr uint64_t kDefaultStartupUs = 5000000;

uint64_t callTimeoutUs() {
    // KARUKAN_FCITX5_TIMEOUT_MS lets tests and slow machines choose; keep it short.
    if (const char *env = std::getenv("KARUKAN_FCITX5_TIMEOUT_MS")) {
        char *end = nullptr;
        long ms = std::strtol(env, &end, 10);
        if (end != env && ms > 0 && ms < 10000) {
            return static_cast<uint64_t>(ms) * 1000;
        }
    }
    return kDefaultTimeoutUs;
}

uint64_t startupBudgetUs() {
    // KARUKAN_FCITX5_STARTUP_MS: how long keys wait for a starting engine service.
    if (const char *env = std::getenv("KARUKAN_FCITX5_STARTUP_MS")) {
        char *end = nullptr;
        long ms = std::strtol(env, &end, 10);
        if (end != env && ms > 0 && ms <= 600000) {
            return static_cast<uint64_t>(ms) * 1000;
        }
    }
    return kDefaultStartupUs;
}

}  // namespace

namespace fcitx {

KarukanEngine::KarukanEngine(Instance *instance)
    : instance_(instance), timeoutUs_(callTimeoutUs()), startupUs_(startupBudgetUs()),
      factory_([this](InputContext &ic) { return new KarukanState(this, &ic); }) {
    instance_->inputContextManager().registerProperty("karukanState", &factory_);
    bus_ = dbus()->call<IDBusModule::bus>();
    watcher_ = std::make_unique<dbus::ServiceWatcher>(*bus_);
    watcherEntry_ = watcher_->watchService(
        kService, [this](const std::string &, const std::string &, const std::string &newOwner) {
            onOwnerChanged(newOwner);
        });
    updates_ = bus_->addMatch(dbus::MatchRule("", kPath, kInterface, "ViewUpdated"),
                              [this](dbus::Message &msg) {
                                  onViewUpdated(msg);
                                  return true;
                              });
    replayEvent_ = instance_->eventLoop().addDeferEvent([this](EventSource *) {
        replay();
        return true;
    });
    replayEvent_->setEnabled(false);
    capabilityWatcher_ = instance_->watchEvent(
        EventType::InputContextCapabilityChanged, EventWatcherPhase::Default, [this](Event &event) {
            auto &changed = static_cast<CapabilityChangedEvent &>(event);
            onCapabilityChanged(changed.inputContext(), changed.oldFlags(), changed.newFlags());
        });
    // fcitx5 loads the addon at startup (it preloads the group's input method) or on first
    // use: start the engine service now, so that it is up before the first key.
    startService();
}

void KarukanEngine::keyEvent(const InputMethodEntry &, KeyEvent &event) {
    auto *ic = event.inputContext();
    if (ic->capabilityFlags().testAny(CapabilityFlag::PasswordOrSensitive)) {
        return;  // pass through, never seen by the engine
    }
    if (mustHold()) {
        hold(HeldEvent::Kind::Key, ic, event.rawKey(), event.isRelease());
        event.filterAndAccept();
        return;
    }
    if (event.isRelease()) {
        // The engine handles no release and changes nothing for one (Session.process_key): a
        // round trip for it only kept fcitx5 from the next key (about 1 ms at a typist's pace).
        return;
    }
    if (commitReturn(ic, event.rawKey())) {
        event.filterAndAccept();
        return;
    }
    WireView view;
    switch (sendKey(ic, event.rawKey(), event.isRelease(), view)) {
    case Outcome::Answered:
        apply(ic, view, true);
        if (std::get<0>(view.data())) {
            event.filterAndAccept();
        }
        return;
    case Outcome::ServiceMissing:  // it went away: start it again and keep this key for it
        startService();
        if (starting_) {
            hold(HeldEvent::Kind::Key, ic, event.rawKey(), event.isRelease());
            event.filterAndAccept();
        }
        return;
    case Outcome::Failed:
        return;  // slow or broken: the application gets the key
    }
}

void KarukanEngine::activate(const InputMethodEntry &, InputContextEvent &event) {
    focusEvent(HeldEvent::Kind::FocusIn, event.inputContext(), "FocusIn", true);
}

void KarukanEngine::deactivate(const InputMethodEntry &, InputContextEvent &event) {
    auto *ic = event.inputContext();
    // On focus out fcitx5 (or the client, with ClientUnfocusCommit) already commits a client-side
    // preedit; committing the engine's copy too would insert it twice. (While the service
    // starts nothing is shown, so a held focus-out commits the engine's text on replay.)
    const bool committedByFcitx =
        event.type() == EventType::InputContextFocusOut && ic->capabilityFlags().test(CapabilityFlag::Preedit);
    focusEvent(HeldEvent::Kind::FocusOut, ic, "FocusOut", !committedByFcitx);
    clearPanel(ic);
}

void KarukanEngine::reset(const InputMethodEntry &, InputContextEvent &event) {
    focusEvent(HeldEvent::Kind::Reset, event.inputContext(), "Reset", false);
}

void KarukanEngine::selectCandidate(InputContext *ic, int index) {
    auto *state = ensureContext(ic);
    if (!state) {
        return;
    }
    auto msg = call("SelectCandidate");
    msg << state->id << static_cast<uint32_t>(index);
    WireView view;
    if (finish(ic, msg, state, view) == Outcome::Answered) {
        apply(ic, view, true);
    }
}

void KarukanEngine::destroyContext(uint32_t id, uint64_t generation) {
    contexts_.erase(id);
    if (id == 0 || generation != generation_) {
        return;
    }
    auto msg = call("DestroyContext");
    msg << id;
    msg.send();  // fire and forget: the service also drops contexts of departed clients
}

KarukanState::~KarukanState() { engine_->destroyContext(id, generation); }

KarukanCandidate::KarukanCandidate(KarukanEngine *engine, int index, std::string text)
    : CandidateWord(Text(std::move(text))), engine_(engine), index_(index) {}

void KarukanCandidate::select(InputContext *ic) const { engine_->selectCandidate(ic, index_); }

class KarukanFactory : public AddonFactory {
public:
    AddonInstance *create(AddonManager *manager) override { return new KarukanEngine(manager->instance()); }
};

}  // namespace fcitx

FCITX_ADDON_FACTORY(fcitx::KarukanFactory);
