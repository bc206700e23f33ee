// Karukan fcitx5 addon: an input method engine that forwards every key to the Karukan engine
// service (org.karukan.Engine1 on the session bus) and renders the view it answers with.
//
// Calls are synchronous with a short timeout so keys stay in order. The service is asked to start
// (D-Bus activation) as soon as fcitx5 loads the addon, and whenever it is found missing; while it
// starts, keys and focus changes are held in order (the application is told they are handled) and
// replayed once it answers, so nothing typed meanwhile is lost or reaches the application as raw
// romaji. If it does not start within the startup budget, the held keys are forwarded to the
// application unchanged. A service that is up but slow still costs at most one timeout per key,
// after which keys pass through for a while; a ServiceWatcher notices restarts, and the input
// context is re-created on the next key. Password fields never reach the service; a field that
// becomes one while something is typed gets it committed (never learned) first. Nothing typed
// is logged.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fcitx-utils/capabilityflags.h>
#include <fcitx-utils/dbus/bus.h>
#include <fcitx-utils/dbus/matchrule.h>
#include <fcitx-utils/dbus/message.h>
#include <fcitx-utils/dbus/servicewatcher.h>
#include <fcitx-utils/event.h>
#include <fcitx-utils/log.h>
#include <fcitx-utils/trackableobject.h>
#include <fcitx/addonfactory.h>
#include <fcitx/addoninstance.h>
#include <fcitx/addonmanager.h>
#include <fcitx/candidatelist.h>
#include <fcitx/event.h>
#include <fcitx/inputcontext.h>
#include <fcitx/inputcontextproperty.h>
#include <fcitx/inputmethodengine.h>
#include <fcitx/inputpanel.h>
#include <fcitx/instance.h>
#include <fcitx/text.h>
#include <fcitx/userinterface.h>

#include <dbus_public.h>

namespace {

FCITX_DEFINE_LOG_CATEGORY(karukan_log, "karukan");
#define KARUKAN_WARN() FCITX_LOGC(karukan_log, Warn)

constexpr char kService[] = "org.karukan.Engine";
constexpr char kPath[] = "/org/karukan/Engine";
constexpr char kInterface[] = "org.karukan.Engine1";
constexpr uint64_t kDefaultTimeoutUs = 250000;  // a key must never hang the application long
constexpr auto kBackoff = std::chrono::seconds(2);  // after a timeout, pass keys through this long
// How long keys typed while the engine service starts are held before they go to the application
// raw. The service answers in about 0.4 s on a desktop (it loads the dictionary before it takes
// its bus name); the budget leaves room for a busy machine at login.
constexpr uint64_t kDefaultStartupUs = 5000000;
constexpr size_t kMaxHeld = 4096;  // held events beyond this go to the application at once
// The GTK/IBus input purpose and hint the service reads as "password field, learn nothing".
constexpr uint32_t kPurposeFreeForm = 0;
constexpr uint32_t kPurposePassword = 8;
constexpr uint32_t kHintPrivate = 1u << 11;

// Wire form of a view; see ime_frontend/wire.py.
using Span = fcitx::dbus::DBusStruct<std::string, uint32_t>;
using Item = fcitx::dbus::DBusStruct<std::string, std::string, std::string>;
using WireView = fcitx::dbus::DBusStruct<bool, std::string, std::vector<Span>, uint32_t, std::vector<Item>, int32_t,
                                         int32_t, int32_t, uint32_t, std::string, std::string, bool,
                                         std::vector<Item>, int32_t>;
// A key's reply whose suggestion list is the one of the previous reply (sent once, not per key).
constexpr int32_t kSuggestionsUnchanged = -2;

bool sameItems(const std::vector<Item> &a, const std::vector<Item> &b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].data() != b[i].data()) {
            return false;
        }
    }
    return true;
}

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

// Byte offset of the first `chars` UTF-8 characters of text.
size_t utf8Bytes(const std::string &text, uint32_t chars) {
    size_t i = 0;
    for (uint32_t c = 0; c < chars && i < text.size(); ++c) {
        ++i;
        while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) {
            ++i;
        }
    }
    return i;
}

}  // namespace

namespace fcitx {

class KarukanEngine;

// Per input context: the service-side context id, valid for one service generation.
class KarukanState : public InputContextProperty {
public:
    KarukanState(KarukanEngine *engine, InputContext *ic) : engine_(engine), ic_(ic) {}
    ~KarukanState() override;

    uint32_t id = 0;
    uint64_t generation = 0;
    // The suggestion list of the last reply, which a reply marked kSuggestionsUnchanged repeats.
    std::vector<Item> repliedSuggestions;
    int32_t repliedCursor = -1;
    // What this addon last put in the panel's candidate list (to keep it when nothing changed).
    const CandidateList *shownList = nullptr;
    std::vector<Item> shownItems;
    int32_t shownCursor = -1;

private:
    KarukanEngine *engine_;
    InputContext *ic_;
};

class KarukanCandidate : public CandidateWord {
public:
    KarukanCandidate(KarukanEngine *engine, int index, std::string text);
    void select(InputContext *ic) const override;

private:
    KarukanEngine *engine_;
    int index_;
};

// Something typed (or a focus change) while the engine service was starting, replayed in order.
struct HeldEvent {
    enum class Kind { Key, FocusIn, FocusOut, Reset };
    Kind kind;
    TrackableObjectReference<InputContext> ic;
    Key key;
    bool release = false;
};

class KarukanEngine final : public InputMethodEngineV2 {
    Instance *instance_;

public:
    // Defines dbus(); it must come before any use (the macro declares an auto-returning member).
    FCITX_ADDON_DEPENDENCY_LOADER(dbus, instance_->addonManager());

    explicit KarukanEngine(Instance *instance)
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

    void keyEvent(const InputMethodEntry &, KeyEvent &event) override {
        auto *ic = event.inputContext();
        if (ic->capabilityFlags().testAny(CapabilityFlag::PasswordOrSensitive)) {
            return;  // pass through, never seen by the engine
        }
        if (mustHold()) {
            hold(HeldEvent::Kind::Key, ic, event.rawKey(), event.isRelease());
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

    void activate(const InputMethodEntry &, InputContextEvent &event) override {
        focusEvent(HeldEvent::Kind::FocusIn, event.inputContext(), "FocusIn", true);
    }

    void deactivate(const InputMethodEntry &, InputContextEvent &event) override {
        auto *ic = event.inputContext();
        // On focus out fcitx5 (or the client, with ClientUnfocusCommit) already commits a client-side
        // preedit; committing the engine's copy too would insert it twice. (While the service
        // starts nothing is shown, so a held focus-out commits the engine's text on replay.)
        const bool committedByFcitx =
            event.type() == EventType::InputContextFocusOut && ic->capabilityFlags().test(CapabilityFlag::Preedit);
        focusEvent(HeldEvent::Kind::FocusOut, ic, "FocusOut", !committedByFcitx);
        clearPanel(ic);
    }

    void reset(const InputMethodEntry &, InputContextEvent &event) override {
        focusEvent(HeldEvent::Kind::Reset, event.inputContext(), "Reset", false);
    }

    void selectCandidate(InputContext *ic, int index) {
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

    void destroyContext(uint32_t id, uint64_t generation) {
        contexts_.erase(id);
        if (id == 0 || generation != generation_) {
            return;
        }
        auto msg = call("DestroyContext");
        msg << id;
        msg.send();  // fire and forget: the service also drops contexts of departed clients
    }

private:
    enum class Outcome { Answered, ServiceMissing, Failed };

    dbus::Message call(const char *method) { return bus_->createMethodCall(kService, kPath, kInterface, method); }

    dbus::Message busCall(const char *method) {
        return bus_->createMethodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method);
    }

    // --- starting the service and holding keys meanwhile ---------------------------------------

    // Hold this event? True while a start is in flight; a service known to be missing is started.
    bool mustHold() {
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
    void startService() {
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

    void onStartReply(dbus::Message &reply) {
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
    void learnOwner() {
        auto msg = busCall("GetNameOwner");
        msg << std::string(kService);
        auto reply = msg.call(timeoutUs_);
        std::string owner;
        if (!reply.isError() && (reply >> owner)) {
            onOwnerChanged(owner);
        }
    }

    void onOwnerChanged(const std::string &newOwner) {
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

    void hold(HeldEvent::Kind kind, InputContext *ic, const Key &key = Key(), bool release = false) {
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
    void scheduleReplay() {
        if (!held_.empty()) {
            replayEvent_->setOneShot();
        }
    }

    // Send the held events in order; keys the engine does not handle (and all of them, when the
    // service is not there) go to the application as they were typed.
    void replay() {
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

    void focusEvent(HeldEvent::Kind kind, InputContext *ic, const char *method, bool commit) {
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

    Outcome sendKey(InputContext *ic, const Key &key, bool release, WireView &view) {
        Outcome created = Outcome::Answered;
        auto *state = ensureContext(ic, &created);
        if (!state) {
            return created;
        }
        auto msg = call("ProcessKey");
        msg << state->id << static_cast<uint32_t>(key.sym()) << static_cast<uint32_t>(key.code())
            << static_cast<uint32_t>(key.states()) << release;
        return finish(ic, msg, state, view);
    }

    KarukanState *ensureContext(InputContext *ic, Outcome *outcome = nullptr) {
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
        state->repliedSuggestions.clear();  // a new context: its first reply carries its list whole
        state->repliedCursor = -1;
        contexts_[id] = ic->watch();
        return state;
    }

    // Send a prepared call. On any failure the context is dropped (the next key starts a fresh
    // one) and the panel cleared: keys that passed through meanwhile made the old composition moot.
    Outcome finish(InputContext *ic, dbus::Message &msg, KarukanState *state, WireView &view) {
        auto reply = timedCall(msg);
        if (reply.isError() || !(reply >> view)) {
            KARUKAN_WARN() << "engine call failed: " << reply.errorName();
            destroyContext(state->id, state->generation);
            state->id = 0;
            clearPanel(ic);
            return lastCallMissing_ ? Outcome::ServiceMissing : Outcome::Failed;
        }
        return Outcome::Answered;
    }

    bool available() const { return std::chrono::steady_clock::now() >= backoffUntil_; }

    bool nameHasOwner() {
        auto msg = busCall("NameHasOwner");
        msg << std::string(kService);
        auto reply = msg.call(timeoutUs_);
        bool owned = true;  // when even the bus does not answer, treat the service as slow
        if (!reply.isError()) {
            reply >> owned;
        }
        return owned;
    }

    dbus::Message timedCall(dbus::Message &msg) {
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

    Outcome simpleCall(InputContext *ic, const char *method, bool commit) {
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

    // A field that turns sensitive: keys pass through from now on, so the service is told, and it
    // commits what was being typed without learning it (that commit comes back as a ViewUpdated
    // signal). fcitx5 itself switches input methods when the Password flag flips (the engine gets
    // a focus-out, which commits), but not for Sensitive alone. Only contexts the service already
    // knows are told; one it does not know has nothing typed.
    void onCapabilityChanged(InputContext *ic, CapabilityFlags oldFlags, CapabilityFlags newFlags) {
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

    void onViewUpdated(dbus::Message &msg) {
        uint32_t id = 0;
        WireView view;
        if (!(msg >> id >> view)) {
            return;
        }
        auto it = contexts_.find(id);
        if (it == contexts_.end() || !it->second.isValid()) {
            return;
        }
        auto *ic = it->second.get();
        if (ic->hasFocus()) {
            apply(ic, view, false);
        }
    }

    void clearPanel(InputContext *ic) {
        ic->inputPanel().reset();
        ic->updatePreedit();
        ic->updateUserInterface(UserInterfaceComponent::InputPanel);
    }

    // Show a view: reply is true for a method's answer (which may repeat the previous reply's
    // suggestion list by reference), false for a ViewUpdated signal (always whole).
    void apply(InputContext *ic, const WireView &wire, bool reply, bool commit = true) {
        const auto &[handled, commitText, spans, caret, items, cursor, page, pages, total, aux, mode, enabled,
                     suggestions, suggestionCursor] = wire.data();
        (void)handled, (void)page, (void)pages, (void)total, (void)mode, (void)enabled;
        auto *state = ic->propertyFor(&factory_);
        static const std::vector<Item> none;
        const std::vector<Item> *listed = &suggestions;
        int32_t listedCursor = suggestionCursor;
        if (suggestionCursor == kSuggestionsUnchanged) {
            listed = reply ? &state->repliedSuggestions : &none;
            listedCursor = reply ? state->repliedCursor : -1;
        } else if (reply) {
            state->repliedSuggestions = suggestions;
            state->repliedCursor = suggestionCursor;
        }
        if (commit && !commitText.empty()) {
            ic->commitString(commitText);
        }
        Text preedit;
        std::string whole;
        for (const auto &span : spans) {
            const auto &[text, style] = span.data();
            preedit.append(text, style == 1 ? TextFormatFlags{TextFormatFlag::HighLight}
                                            : TextFormatFlags{TextFormatFlag::Underline});
            whole += text;
        }
        if (!whole.empty()) {
            preedit.setCursor(static_cast<int>(utf8Bytes(whole, caret)));
        }
        // Conversion candidates, or else the suggestions while composing (no cursor until one is
        // selected with Tab / Down); a view never carries both.
        const std::vector<Item> &list = !items.empty() ? items : *listed;
        const int32_t listCursor = !items.empty() ? cursor : listedCursor;
        auto &panel = ic->inputPanel();
        const bool clientPreedit = ic->capabilityFlags().test(CapabilityFlag::Preedit);
        const bool sameList = panel.candidateList().get() == (list.empty() ? nullptr : state->shownList) &&
                              (list.empty() || (sameItems(list, state->shownItems) && listCursor == state->shownCursor));
        if (clientPreedit && sameList && panel.auxUp().toString() == aux && panel.auxDown().empty() &&
            panel.preedit().empty()) {
            // Only the application's own preedit changes: the candidate window (fcitx5's, or the
            // client's own) is left as it is instead of being rebuilt and redrawn for every key.
            panel.setClientPreedit(preedit);
            ic->updatePreedit();
            return;
        }
        panel.setClientPreedit(clientPreedit ? preedit : Text());
        panel.setPreedit(clientPreedit ? Text() : preedit);
        panel.setAuxUp(aux.empty() ? Text() : Text(aux));
        panel.setAuxDown(Text());
        if (!sameList) {
            if (list.empty()) {
                panel.setCandidateList(nullptr);
                state->shownList = nullptr;
            } else {
                panel.setCandidateList(candidateList(list, listCursor));
                state->shownList = panel.candidateList().get();
            }
            state->shownItems = list;
            state->shownCursor = listCursor;
        }
        ic->updatePreedit();
        ic->updateUserInterface(UserInterfaceComponent::InputPanel);
    }

    std::unique_ptr<CommonCandidateList> candidateList(const std::vector<Item> &items, int32_t cursor) {
        auto list = std::make_unique<CommonCandidateList>();
        std::vector<std::string> labels;
        int index = 0;
        for (const auto &item : items) {
            const auto &[label, text, note] = item.data();
            labels.push_back(label + ". ");
            list->append<KarukanCandidate>(this, index++, note.empty() ? text : text + " " + note);
        }
        list->setLabels(labels);
        list->setPageSize(static_cast<int>(items.size()));
        list->setGlobalCursorIndex(cursor);
        return list;
    }

    uint64_t timeoutUs_;
    uint64_t startupUs_;
    FactoryFor<KarukanState> factory_;
    dbus::Bus *bus_ = nullptr;
    std::unique_ptr<dbus::ServiceWatcher> watcher_;
    std::unique_ptr<dbus::ServiceWatcherEntry> watcherEntry_;
    std::unique_ptr<dbus::Slot> updates_;
    std::unique_ptr<dbus::Slot> startCall_;
    std::unique_ptr<EventSource> replayEvent_;
    std::unique_ptr<HandlerTableEntry<EventHandler>> capabilityWatcher_;
    std::deque<HeldEvent> held_;
    std::string owner_;          // the service's unique name on the bus; empty while it is not there
    bool serviceUp_ = false;
    bool starting_ = false;      // a StartServiceByName is in flight: events are held
    bool lastCallMissing_ = false;
    uint64_t generation_ = 1;
    std::chrono::steady_clock::time_point backoffUntil_{};
    std::unordered_map<uint32_t, TrackableObjectReference<InputContext>> contexts_;
};

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
