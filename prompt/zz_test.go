package prompt_test
import ("testing";"os";"strings")
func TestZZ(t *testing.T){
	c := loadCorpus(t, "testdata/liquid-corpus.json")
	for _, tpl := range strings.Split(os.Getenv("ZZ"), "\n---\n") {
		t.Logf("%q => %v", tpl, renderGo(tpl, cloneJSON(t, c.Contexts["base"])))
	}
}
