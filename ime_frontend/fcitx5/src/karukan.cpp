// Karukan fcitx5 addon: an input method engine that forwards every key to the Karukan engine
// service (org.karukan.Engine1 on the session bus) and renders the view it answers with.
//
// Calls are synchronous with a short timeout so keys stay in order; when the service is missing,
// slow or restarting, the key passes through to the application and the input context is
// re-created on the next key (a ServiceWatcher notices restarts). Password fields never reach
// the service. Nothing typed is logged.

#include <chrono>
#include <cstdint>
#include <cstdlib>
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

// Wire form of a view; see ime_frontend/wire.py.
using Span = fcitx::dbus::DBusStruct<std::string, uint32_t>;
using Item = fcitx::dbus::DBusStruct<std::string, std::string, std::string>;
using WireView = fcitx::dbus::DBusStruct<bool, std::string, std::vector<Span>, uint32_t, std::vector<Item>, int32_t,
                                         int32_t, int32_t, uint32_t, std::string, std::string, bool>;

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

class KarukanEngine final : public InputMethodEngineV2 {
    Instance *instance_;

public:
    // Defines dbus(); it must come before any use (the macro declares an auto-returning member).
    FCITX_ADDON_DEPENDENCY_LOADER(dbus, instance_->addonManager());

    explicit KarukanEngine(Instance *instance)
        : instance_(instance), timeoutUs_(callTimeoutUs()),
          factory_([this](InputContext &ic) { return new KarukanState(this, &ic); }) {
        instance_->inputContextManager().registerProperty("karukanState", &factory_);
        bus_ = dbus()->call<IDBusModule::bus>();
        watcher_ = std::make_unique<dbus::ServiceWatcher>(*bus_);
        watcherEntry_ = watcher_->watchService(
            kService, [this](const std::string &, const std::string &, const std::string &) {
                // The service started, stopped or was replaced: every context id is stale.
                ++generation_;
                contexts_.clear();
            });
        updates_ = bus_->addMatch(dbus::MatchRule("", kPath, kInterface, "ViewUpdated"),
                                  [this](dbus::Message &msg) {
                                      onViewUpdated(msg);
                                      return true;
                                  });
    }

    void keyEvent(const InputMethodEntry &, KeyEvent &event) override {
        auto *ic = event.inputContext();
        if (ic->capabilityFlags().testAny(CapabilityFlag::PasswordOrSensitive)) {
            return;  // pass through, never seen by the engine
        }
        auto *state = ensureContext(ic);
        if (!state) {
            return;
        }
        auto msg = call("ProcessKey");
        msg << state->id << static_cast<uint32_t>(event.rawKey().sym()) << static_cast<uint32_t>(event.rawKey().code())
            << static_cast<uint32_t>(event.rawKey().states()) << event.isRelease();
        WireView view;
        if (!finish(ic, msg, state, view)) {
            return;
        }
        apply(ic, view);
        if (std::get<0>(view.data())) {
            event.filterAndAccept();
        }
    }

    void activate(const InputMethodEntry &, InputContextEvent &event) override {
        simpleCall(event.inputContext(), "FocusIn", true);
    }

    void deactivate(const InputMethodEntry &, InputContextEvent &event) override {
        auto *ic = event.inputContext();
        // On focus out fcitx5 (or the client, with ClientUnfocusCommit) already commits a client-side
        // preedit; committing the engine's copy too would insert it twice.
        const bool committedByFcitx =
            event.type() == EventType::InputContextFocusOut && ic->capabilityFlags().test(CapabilityFlag::Preedit);
        simpleCall(ic, "FocusOut", !committedByFcitx);
        clearPanel(ic);
    }

    void reset(const InputMethodEntry &, InputContextEvent &event) override {
        simpleCall(event.inputContext(), "Reset", false);
    }

    void selectCandidate(InputContext *ic, int index) {
        auto *state = ensureContext(ic);
        if (!state) {
            return;
        }
        auto msg = call("SelectCandidate");
        msg << state->id << static_cast<uint32_t>(index);
        WireView view;
        if (finish(ic, msg, state, view)) {
            apply(ic, view);
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
    dbus::Message call(const char *method) { return bus_->createMethodCall(kService, kPath, kInterface, method); }

    KarukanState *ensureContext(InputContext *ic) {
        if (!available()) {
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
            KARUKAN_WARN() << "engine service unavailable (" << reply.errorName() << "); keys pass through";
            return nullptr;
        }
        state->id = id;
        state->generation = generation_;
        contexts_[id] = ic->watch();
        return state;
    }

    // Send a prepared call. On any failure the context is dropped (the next key starts a fresh
    // one) and the panel cleared: keys that passed through meanwhile made the old composition moot.
    bool finish(InputContext *ic, dbus::Message &msg, KarukanState *state, WireView &view) {
        auto reply = timedCall(msg);
        if (reply.isError() || !(reply >> view)) {
            KARUKAN_WARN() << "engine call failed: " << reply.errorName();
            destroyContext(state->id, state->generation);
            state->id = 0;
            clearPanel(ic);
            return false;
        }
        return true;
    }

    bool available() const { return std::chrono::steady_clock::now() >= backoffUntil_; }

    dbus::Message timedCall(dbus::Message &msg) {
        const auto start = std::chrono::steady_clock::now();
        auto reply = msg.call(timeoutUs_);
        const auto waited = std::chrono::steady_clock::now() - start;
        if (reply.isError() && waited >= std::chrono::microseconds(timeoutUs_ * 9 / 10)) {
            // No answer in time: stop asking for a while so the application stays fluid.
            backoffUntil_ = std::chrono::steady_clock::now() + kBackoff;
            KARUKAN_WARN() << "engine service did not answer in time; keys pass through for a while";
        }
        return reply;
    }

    void simpleCall(InputContext *ic, const char *method, bool commit) {
        if (ic->capabilityFlags().testAny(CapabilityFlag::PasswordOrSensitive)) {
            return;
        }
        auto *state = ensureContext(ic);
        if (!state) {
            return;
        }
        auto msg = call(method);
        msg << state->id;
        WireView view;
        if (finish(ic, msg, state, view)) {
            apply(ic, view, commit);
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
            apply(ic, view);
        }
    }

    void clearPanel(InputContext *ic) {
        ic->inputPanel().reset();
        ic->updatePreedit();
        ic->updateUserInterface(UserInterfaceComponent::InputPanel);
    }

    void apply(InputContext *ic, const WireView &wire, bool commit = true) {
        const auto &[handled, commitText, spans, caret, items, cursor, page, pages, total, aux, mode, enabled] =
            wire.data();
        (void)handled, (void)page, (void)pages, (void)total, (void)mode, (void)enabled;
        if (commit && !commitText.empty()) {
            ic->commitString(commitText);
        }
        auto &panel = ic->inputPanel();
        panel.reset();
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
        if (ic->capabilityFlags().test(CapabilityFlag::Preedit)) {
            panel.setClientPreedit(preedit);
        } else {
            panel.setPreedit(preedit);
        }
        if (!aux.empty()) {
            panel.setAuxUp(Text(aux));
        }
        if (!items.empty()) {
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
            panel.setCandidateList(std::move(list));
        }
        ic->updatePreedit();
        ic->updateUserInterface(UserInterfaceComponent::InputPanel);
    }

    uint64_t timeoutUs_;
    FactoryFor<KarukanState> factory_;
    dbus::Bus *bus_ = nullptr;
    std::unique_ptr<dbus::ServiceWatcher> watcher_;
    std::unique_ptr<dbus::ServiceWatcherEntry> watcherEntry_;
    std::unique_ptr<dbus::Slot> updates_;
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
