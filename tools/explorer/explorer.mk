# The Latency Explorer: its page (tools/explorer) and Apache ECharts from npm,
# installed at build time by `npm ci` from the committed lockfile into
# $(BUILD)/explorer/npm (with puppeteer-core, which drives the page's test in
# Chromium), and laid out in $(BUILD)/explorer/www: the initrd's /www/explorer
# and what `mscope explore` serves.  Nothing is fetched when the page runs.

EXPLORER_NPM := $(BUILD)/explorer/npm
EXPLORER_WWW := $(BUILD)/explorer/www
EXPLORER_INSTALLED := $(EXPLORER_NPM)/node_modules/.package-lock.json
EXPLORER_PAGE := index.html explorer.js explorer.css
EXPLORER_FILES := $(addprefix $(EXPLORER_WWW)/,$(EXPLORER_PAGE) echarts.min.js)

.PHONY: explorer
explorer: $(EXPLORER_FILES)
all: explorer
$(INITRD): $(EXPLORER_FILES)

$(EXPLORER_INSTALLED): tools/explorer/package.json tools/explorer/package-lock.json
	$(say) NPM $(EXPLORER_NPM)
	$(Q)mkdir -p $(EXPLORER_NPM)
	$(Q)cp tools/explorer/package.json tools/explorer/package-lock.json $(EXPLORER_NPM)/
	$(Q)cd $(EXPLORER_NPM) && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	$(Q)touch $@

$(EXPLORER_WWW)/echarts.min.js: $(EXPLORER_INSTALLED)
	$(Q)mkdir -p $(dir $@)
	$(Q)cp $(EXPLORER_NPM)/node_modules/echarts/dist/echarts.min.js $@

$(EXPLORER_WWW)/%: tools/explorer/%
	$(Q)mkdir -p $(dir $@)
	$(Q)cp $< $@
