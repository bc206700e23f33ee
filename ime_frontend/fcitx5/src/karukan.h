// Karukan fcitx5 addon: an input method engine that forwards every key to the Karukan engine
// service (org.karukan.Engine1 on the session bus) and renders the view it answers with.
//
// Calls are synchronous with a short timeout so keys stay in order; a plain Return that commits
// what the last view says it commits is answered here and the service told after, in order. The
// service is asked to start (D-Bus activation) as soon as fcitx5 loads the addon, and whenever it
// is found missing; while it starts, keys and focus changes are held in order (the application is
// told they are handled) and replayed once it answers, so nothing typed meanwhile is lost or
// reaches the application as raw romaji. If it does not start within the startup budget, the
// held keys are forwarded to the application unchanged. A service that is up but slow still costs
// at most one timeout per key, after which keys pass through for a while; a ServiceWatcher
// notices restarts, and the input context is re-created on the next key. Password fields never
// reach the service; a field that becomes one while something is typed gets it committed (never
// learned) first. Nothing typed is logged.
//
// One class, three files: karukan.cpp (fcitx5's entry points), service.cpp (starting the
// service, holding and replaying keys, the D-Bus calls), panel.cpp (preedit, candidates, aux).

#ifndef KARUKAN_FCITX5_KARUKAN_H
#define KARUKAN_FCITX5_KARUKAN_H

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <fcitx-utils/dbus/bus.h>
#include <fcitx-utils/dbus/message.h>
#include <fcitx-utils/dbus/servicewatcher.h>
#include <fcitx-utils/event.h>
#include <fcitx-utils/log.h>
#include <fcitx-utils/trackableobject.h>
#include <fcitx/addoninstance.h>
#include <fcitx/addonmanager.h>
#include <fcitx/candidatelist.h>
#include <fcitx/event.h>
#include <fcitx/inputcontext.h>
#include <fcitx/inputcontextproperty.h>
#include <fcitx/inputmethodengine.h>
#include <fcitx/instance.h>

#include <dbus_public.h>

FCITX_DECLARE_LOG_CATEGORY(karukan_log);
#define KARUKAN_WARN() FCITX_LOGC(karukan_log, Warn)

namespace fcitx {

constexpr char kService[] = "org.karukan.Engine";
constexpr char kPath[] = "/org/karukan/Engine";
constexpr char kInterface[] = "org.karukan.Engine1";

// Wire form of a view; see ime_frontend/wire.py.
using Span = dbus::DBusStruct<std::string, uint32_t>;
using Item = dbus::DBusStruct<std::string, std::string, std::string>;
using WireView = dbus::DBusStruct<bool, std::string, std::vector<Span>, uint32_t, std::vector<Item>, int32_t,
                                  int32_t, int32_t, uint32_t, std::string, std::string, bool,
                                  std::vector<Item>, int32_t, std::string>;
// The service's GetInfo answer: its settings and state by name (see ime_frontend/service.py).
using InfoEntry = dbus::DictEntry<std::string, std::string>;
// A key's reply whose suggestion list is the one of the previous reply (sent once, not per key).
constexpr int32_t kSuggestionsUnchanged = -2;

class KarukanEngine;

// Whether a view shows something being composed (a preedit, or conversion candidates).
inline bool composing(const WireView &view) {
    return !std::get<2>(view.data()).empty() || !std::get<4>(view.data()).empty();
}

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
    // View replies read from this context: a ViewUpdated the service sent before the last of
    // them (queued while a synchronous call waited) is older than what is shown, and dropped.
    uint32_t replies = 0;
    // The unique bus name that answered CreateContext: late views from any other peer are ignored.
    std::string owner;
    // The key events of the composition being typed (handled since the preedit was last empty).
    // A service that dies mid-composition takes the composition along; its successor's new
    // context gets these again first, so the keys already shown are not lost. Memory only.
    std::vector<std::pair<Key, bool>> composition;
    bool compositionTooLong = false;   // past kMaxComposition: not restorable, until it ends
    // What this addon last put in the panel's candidate list (to keep it when nothing changed).
    const CandidateList *shownList = nullptr;
    std::vector<Item> shownItems;
    int32_t shownCursor = -1;
    // What a plain Return commits, from the last view shown (its on_return): committed here at
    // once, and the service told after (ReturnCommitted). Until the service answers a later
    // call, its late views belong to the committed composition and are dropped.
    std::string onReturn;
    bool returnedLocally = false;

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

    explicit KarukanEngine(Instance *instance);

    // fcitx5's entry points (karukan.cpp).
    void keyEvent(const InputMethodEntry &, KeyEvent &event) override;
    void activate(const InputMethodEntry &, InputContextEvent &event) override;
    void deactivate(const InputMethodEntry &, InputContextEvent &event) override;
    void reset(const InputMethodEntry &, InputContextEvent &event) override;
    void selectCandidate(InputContext *ic, int index);
    void destroyContext(uint32_t id, uint64_t generation);

private:
    enum class Outcome { Answered, ServiceMissing, Failed };

    // Starting the service and holding events meanwhile (service.cpp).
    bool mustHold();
    void startService();
    void onStartReply(dbus::Message &reply);
    void learnOwner();
    void onOwnerChanged(const std::string &newOwner);
    void hold(HeldEvent::Kind kind, InputContext *ic, const Key &key = Key(), bool release = false);
    void scheduleReplay();
    void replay();

    // Calls to the service (service.cpp).
    dbus::Message call(const char *method);
    dbus::Message busCall(const char *method);
    void focusEvent(HeldEvent::Kind kind, InputContext *ic, const char *method, bool commit);
    Outcome sendKey(InputContext *ic, const Key &key, bool release, WireView &view);
    bool commitReturn(InputContext *ic, const Key &key);
    KarukanState *ensureContext(InputContext *ic, Outcome *outcome = nullptr);
    void restoreComposition(InputContext *ic, KarukanState *state);
    void rememberKey(KarukanState *state, const Key &key, bool release, const WireView &view);
    Outcome finish(InputContext *ic, dbus::Message &msg, KarukanState *state, WireView &view);
    bool available() const;
    bool nameHasOwner();
    dbus::Message timedCall(dbus::Message &msg);
    Outcome simpleCall(InputContext *ic, const char *method, bool commit);
    void readSettings();
    void onCapabilityChanged(InputContext *ic, CapabilityFlags oldFlags, CapabilityFlags newFlags);
    void onViewUpdated(dbus::Message &msg);

    // Drawing (panel.cpp).
    void clearPanel(InputContext *ic);
    void apply(InputContext *ic, const WireView &wire, bool reply, bool commit = true);
    std::unique_ptr<CommonCandidateList> candidateList(const std::vector<Item> &items, int32_t cursor);

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
    uint64_t settingsGeneration_ = 0;   // the service generation whose settings were read
    CandidateLayoutHint layout_ = CandidateLayoutHint::Vertical;   // its [ui] candidate_layout
    std::chrono::steady_clock::time_point backoffUntil_{};
    std::unordered_map<uint32_t, TrackableObjectReference<InputContext>> contexts_;
};

}  // namespace fcitx

#endif  // KARUKAN_FCITX5_KARUKAN_H
