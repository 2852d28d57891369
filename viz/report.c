// The run report (viz/report.h): data checked and embedded as JSON, drawn by
// a small inline script.
#include "viz/report.h"

#include "viz/heatmap.h"
#include "viz/render.h"

#include "tensor/atomic_write.h"
#include "tensor/status.h"
#include "viz/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

// TS_OK when text[0..len) holds no NUL byte, else TS_ERR_FORMAT naming the
// line: C's string functions would stop there and never read what follows.
static int no_nul(const char *text, size_t len, const char *name) {
    const char *nul = text ? memchr(text, '\0', len) : NULL;
    if (!nul) return TS_OK;
    long line = 1;
    for (const char *p = text; p < nul; p++) line += *p == '\n';
    return ts_fail(TS_ERR_FORMAT, "%s:%ld: a NUL byte", name, line);
}

// A CSV file of ours (metrics.csv, steps.csv) as {"columns": [...], "rows":
// [[...], ...]}; an empty field, inf or nan is null.
static int write_csv(FILE *f, const char *text, size_t text_len, const char *name) {
    int rc = no_nul(text, text_len, name);
    if (rc) return rc;
    fputs("{\"columns\":[", f);
    const char *p = text ? text : "";
    long line = 1;
    size_t columns = 0;
    // The header: names of [a-z_].
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    for (size_t i = 0, start = 0; *p && i <= len; i++) {
        if (i < len && p[i] != ',') {
            if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_'))
                return ts_fail(TS_ERR_FORMAT, "%s:1: a column name has '%c'", name, p[i]);
            continue;
        }
        fprintf(f, "%s\"%.*s\"", columns++ ? "," : "", (int)(i - start), p + start);
        start = i + 1;
    }
    fputs("],\"rows\":[", f);
    p = end ? end + 1 : p + len;
    for (long row = 0; *p; row++) {
        line++;
        end = strchr(p, '\n');
        len = end ? (size_t)(end - p) : strlen(p);
        fputs(row ? ",[" : "[", f);
        size_t fields = 0;
        for (const char *q = p; q <= p + len;) {
            if (q == p + len || *q == ',') {  // an empty field
                fputs(fields++ ? ",null" : "null", f);
                q++;
                continue;
            }
            char *stop;
            double v = strtod(q, &stop);
            if (stop == q || (stop < p + len && *stop != ','))
                return ts_fail(TS_ERR_FORMAT, "%s:%ld: field %zu is not a number", name, line, fields + 1);
            // A diverged run's inf or nan (dev_ppl of a huge loss) is a gap in its chart.
            if (isfinite(v)) fprintf(f, "%s%.17g", fields++ ? "," : "", v);
            else fputs(fields++ ? ",null" : "null", f);
            q = stop + 1;
        }
        if (fields != columns)
            return ts_fail(TS_ERR_FORMAT, "%s:%ld: %zu fields, the header has %zu", name, line, fields, columns);
        fputc(']', f);
        p = end ? end + 1 : p + len;
    }
    fputs("]}", f);
    return TS_OK;
}

// heads.csv (tinyseq train's: each evaluation's AER of every cross-attention
// head, then each layer's head mean as head "mean") as {"rows": [[epoch,
// step, layer, head, aer], ...]}, the mean's head -1, an aer not measured
// (empty, nan) null. The header must be train's; a row of another shape,
// a layer or head outside 0..1023, is TS_ERR_FORMAT naming its line.
static int write_heads(FILE *f, const char *text, size_t text_len, const char *name) {
    static const char header[] = "epoch,step,layer,head,aer";
    int rc = no_nul(text, text_len, name);
    if (rc) return rc;
    const char *p = text ? text : "";
    if (*p && (strncmp(p, header, sizeof header - 1) || (p[sizeof header - 1] != '\n' && p[sizeof header - 1])))
        return ts_fail(TS_ERR_FORMAT, "%s:1: not the header tinyseq train writes (%s)", name, header);
    p += *p ? sizeof header - 1 + (p[sizeof header - 1] == '\n') : 0;
    fputs("{\"rows\":[", f);
    for (long line = 2, row = 0; *p; line++, row++) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        double v[5];  // epoch, step, layer, head, aer
        const char *q = p;
        int ok = 1;
        for (int i = 0; i < 5 && ok; i++) {
            size_t n = strcspn(q, ",\n");
            if (i == 3 && n == 4 && !strncmp(q, "mean", 4)) {
                v[i] = -1;
            } else if (i == 4 && n == 0) {
                v[i] = NAN;
            } else {
                char *stop;
                v[i] = strtod(q, &stop);
                ok = stop == q + n && n > 0 && (i == 4 || isfinite(v[i]));
                if (ok && i >= 1 && i <= 3) ok = v[i] >= 0 && v[i] == floor(v[i]) && (i == 1 || v[i] <= 1023);
            }
            q += n;
            if (ok && i < 4) ok = *q == ',' ? (q++, 1) : 0;
        }
        if (!ok || q != p + len)
            return ts_fail(TS_ERR_FORMAT, "%s:%ld: not a row of epoch,step,layer,head,aer", name, line);
        fputs(row ? ",[" : "[", f);
        for (int i = 0; i < 5; i++) {
            if (i) fputc(',', f);
            if (isfinite(v[i])) fprintf(f, "%.17g", v[i]);
            else fputs("null", f);
        }
        fputc(']', f);
        p = end ? end + 1 : p + len;
    }
    fputs("]}", f);
    return TS_OK;
}

// config.txt's "key = value" lines (comments and blank lines skipped) as
// [["key","value"], ...], the values through the one JSON string escaper
// (ts_render_json_string: '<', '>', '&' and controls escaped); keys of a-z
// and '_', values valid UTF-8. A line of another shape is TS_ERR_FORMAT
// naming it.
static int write_config(FILE *f, const char *text, const char *name) {
    fputc('[', f);
    long line = 0;
    int rows = 0;
    char key[64], value[4096];
    for (const char *p = text ? text : ""; *p;) {
        line++;
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len && *p != '#') {
            size_t k = eq ? (size_t)(eq - p) : 0;
            while (k && p[k - 1] == ' ') k--;
            for (size_t i = 0; i < k; i++)
                if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_')) k = 0;
            const char *v = eq ? eq + 1 : p;
            while (v < p + len && *v == ' ') v++;
            size_t n = (size_t)(p + len - v);
            if (!eq || !k || k >= sizeof key || n >= sizeof value || u8_check((const uint8_t *)v, n))
                return ts_fail(TS_ERR_FORMAT, "%s:%ld: not a line tinyseq train writes (key = value, UTF-8)", name, line);
            memcpy(key, p, k);
            key[k] = '\0';
            memcpy(value, v, n);
            value[n] = '\0';
            fputs(rows++ ? ",[" : "[", f);
            ts_render_json_string(f, key);
            fputc(',', f);
            ts_render_json_string(f, value);
            fputc(']', f);
        }
        p = end ? end + 1 : p + len;
    }
    fputc(']', f);
    return TS_OK;
}

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width\">\n<title>tinyseq report</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}p{max-width:1000px}\n"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:16px}.charts svg{border:1px solid #ddd;background:#fff}\n"
    ".pair{display:flex;flex-wrap:nowrap;gap:24px;align-items:flex-start;overflow-x:auto}\n"
    ".beside{display:flex;gap:16px;align-items:flex-start}.beside>div{flex:0 1 auto;min-width:0}"
    ".beside svg{max-width:100%;height:auto}\n"
    "table.heat{border-collapse:collapse}table.heat td{height:22px;padding:0;text-align:center;font-size:10px}\n"
    ".wrong{color:#c00;text-decoration:underline wavy #c00}\n"
    ".scale{display:flex;align-items:center;gap:6px;font-size:12px;margin:8px 0}\n"
    ".scale .bar{width:160px;height:12px;border:1px solid #aaa}\n"
    "table.heat th{font-weight:normal;font-size:12px;padding:2px 4px}\n"
    "table.grid{border-spacing:10px 6px}table.grid th{font-weight:normal;font-size:12px}table.grid td{vertical-align:top}\n"
    "table.heat th.src{writing-mode:vertical-rl;transform:rotate(180deg);height:70px;vertical-align:bottom}\n"
    "#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;"
    "font-size:12px;display:none}\n.controls{display:flex;gap:16px;align-items:center;flex-wrap:wrap}\n"
    ".muted{color:#777}table.config td{padding:1px 12px 1px 0;font-size:12px}\n"
    "table.aer{border-collapse:collapse;font-size:13px}table.aer td,table.aer th{padding:2px 10px;text-align:right}"
    "table.aer th{font-weight:normal;color:#555}table.aer td.best{font-weight:bold}"
    "table.aer td.guided{outline:2px solid #d62728;outline-offset:-2px}\n</style></head>\n<body>\n";

static const char page_script[] =
    "<script>\n"
    "'use strict';\n"
    "const NS='http://www.w3.org/2000/svg';\n"  // a namespace name, never fetched
    "function el(tag,attrs,parent,ns){const e=ns?document.createElementNS(NS,tag):document.createElement(tag);"
    "for(const k in attrs||{})e.setAttribute(k,attrs[k]);if(parent)parent.appendChild(e);return e;}\n"
    "function txt(tag,attrs,text,parent,ns){const e=el(tag,attrs,parent,ns);e.textContent=text;return e;}\n"
    "const VIRIDIS=[[68,1,84],[59,82,139],[33,145,140],[94,201,98],[253,231,37]];\n"
    "function colour(w){w=Math.max(0,Math.min(1,isFinite(w)?w:0))*(VIRIDIS.length-1);const i=Math.min(Math.floor(w),"
    "VIRIDIS.length-2),t=w-i;return VIRIDIS[i].map((c,k)=>Math.round(c+(VIRIDIS[i+1][k]-c)*t));}\n"
    // Axes at round values (1-2-5 steps), as viz/plot.c draws loss.svg.
    "function niceStep(range,n){const raw=range/n,mag=Math.pow(10,Math.floor(Math.log10(raw))),f=raw/mag;"
    "return (f<=1?1:f<=2?2:f<=5?5:10)*mag;}\n"
    "function roundAxis(lo,hi,n){if(hi-lo<1e-12*Math.max(1,Math.abs(hi))){const p=Math.abs(hi)>0?0.1*Math.abs(hi):1;"
    "lo-=p;hi+=p;}const step=niceStep(hi-lo,n);return {lo:Math.floor(lo/step)*step,hi:Math.ceil(hi/step)*step,step};}\n"
    "function tickLabels(a){const d=a.step>=1?0:Math.ceil(-Math.log10(a.step)-1e-9),out=[];"
    "for(let k=0;k<=Math.round((a.hi-a.lo)/a.step);k++){const v=a.lo+k*a.step;"
    "out.push([v,(Math.abs(v)<a.step*1e-9?0:v).toFixed(d)]);}return out;}\n"
    // series: {name, color, xs, ys, points}: a line, or (points) dots joined by a dashed line.
    // The plot is PW px wide; its margins are as wide as the tick labels (left: the axis
    // label beside them never overlaps them) and the legend's names (right) need.
    "function lineChart(parent,title,series,xlabel,ylabel){const H=280,T=28,B=44,PW=276;let L=54,R=130;"
    "const svg=el('svg',{height:H},parent,true);"
    "const size=()=>{const W=L+PW+R;svg.setAttribute('width',W);svg.setAttribute('viewBox',`0 0 ${W} ${H}`);"
    "txt('text',{x:L,y:18,'font-size':13},title,svg,true);return W;};"
    "series=series.map(s=>({...s,pts:s.xs.map((x,k)=>[x,s.ys[k]]).filter(p=>p[0]!==null&&p[1]!==null&&isFinite(p[0])&&isFinite(p[1]))}));"
    "const all=series.flatMap(s=>s.pts);"
    "if(!all.length){size();txt('text',{x:L,y:H/2,'class':'muted'},'no data yet',svg,true);return svg;}"
    "const ya=roundAxis(Math.min(...all.map(p=>p[1])),Math.max(...all.map(p=>p[1])),5),"
    "xa=roundAxis(0,Math.max(1,...all.map(p=>p[0])),5);xa.lo=0;"
    "L=Math.max(54,34+6*Math.max(...tickLabels(ya).map(t=>t[1].length)));"
    "R=Math.max(130,36+6.5*Math.max(...series.map(s=>s.name.length)));const W=size();"
    "const X=x=>L+(x-xa.lo)/(xa.hi-xa.lo)*(W-L-R),Y=y=>H-B-(y-ya.lo)/(ya.hi-ya.lo)*(H-T-B);"
    "tickLabels(ya).forEach(([v,t])=>{el('line',{x1:L,y1:Y(v),x2:W-R,y2:Y(v),stroke:'#eee'},svg,true);"
    "txt('text',{x:L-6,y:Y(v)+4,'text-anchor':'end','font-size':10},t,svg,true);});"
    "tickLabels(xa).forEach(([v,t])=>{el('line',{x1:X(v),y1:H-B,x2:X(v),y2:H-B+4,stroke:'#888'},svg,true);"
    "txt('text',{x:X(v),y:H-B+16,'text-anchor':'middle','font-size':10},t,svg,true);});"
    "el('line',{x1:L,y1:H-B,x2:W-R,y2:H-B,stroke:'#888'},svg,true);el('line',{x1:L,y1:T,x2:L,y2:H-B,stroke:'#888'},svg,true);"
    "txt('text',{x:(L+W-R)/2,y:H-8,'text-anchor':'middle','font-size':11},xlabel,svg,true);"
    "txt('text',{x:14,y:(T+H-B)/2,'text-anchor':'middle','font-size':11,transform:`rotate(-90 14 ${(T+H-B)/2})`},ylabel,svg,true);"
    "series.forEach((s,i)=>{const pts=s.pts.map(([x,y])=>[X(x),Y(y)]);"
    "const attrs={points:pts.map(p=>p.join(',')).join(' '),fill:'none',stroke:s.color,'stroke-width':2};"
    "if(s.points)attrs['stroke-dasharray']='5 4';el('polyline',attrs,svg,true);"
    "pts.forEach((p,k)=>{if(!s.points&&pts.length>1)return;const c=el('circle',{cx:p[0],cy:p[1],r:4,fill:s.color},svg,true);"
    "txt('title',{},`${s.name} at ${xlabel} ${s.pts[k][0]}: ${Number(s.pts[k][1]).toFixed(4)}`,c,true);});"
    "el('rect',{x:W-R+10,y:T+i*18,width:12,height:12,fill:s.color},svg,true);"
    "txt('text',{x:W-R+26,y:T+i*18+10,'font-size':11},s.name,svg,true);});return svg;}\n"
    "function column(table,name){const i=table.columns.indexOf(name);return i<0?[]:table.rows.map(r=>r[i]);}\n"
    "const charts=document.getElementById('charts');\n"
    "lineChart(charts,'loss',[{name:'training',color:'#1f77b4',xs:column(STEPS,'step'),ys:column(STEPS,'train_loss')},"
    "{name:'dev',color:'#d62728',xs:column(METRICS,'step'),ys:column(METRICS,'dev_loss'),points:true}],'step','loss');\n"
    "lineChart(charts,'dev scores',[{name:'BLEU',color:'#2ca02c',xs:column(METRICS,'step'),ys:column(METRICS,'dev_bleu'),points:true},"
    "{name:'chrF',color:'#9467bd',xs:column(METRICS,'step'),ys:column(METRICS,'dev_chrf'),points:true},"
    "{name:'exact match',color:'#8c564b',xs:column(METRICS,'step'),ys:column(METRICS,'dev_exact'),points:true}],'step','score (0 to 1)');\n"
    "lineChart(charts,'learning rate',[{name:'lr',color:'#ff7f0e',xs:column(STEPS,'step'),ys:column(STEPS,'lr')}],'step','learning rate');\n"
    // What was trained: config.txt's options as a sentence and a table, and the best epoch and why.
    "function cfg(k){const r=CONFIG.find(x=>x[0]===k);return r?r[1]:undefined;}\n"
    // Guided alignment (train --guided-alignment): the head it trained towards gold links, or null.
    "function guidedHead(){return cfg('guided_alignment')?{l:Number(cfg('guided_layer')||0),k:Number(cfg('guided_head')||0)}:null;}\n"
    "function guidedText(){const g=guidedHead();if(!g)return '';const a=cfg('guided_alignment');\n"
    // One cross-attention head (a GRU's) is "the attention"; the page asks the checkpoint, not the architecture's name.
    "const one=MODEL_HEADS!==null&&MODEL_HEADS[0]*MODEL_HEADS[1]===1;\n"
    "return `; guided alignment: ${one?'the attention':`cross-attention layer ${g.l} head ${g.k}`} trained `\n"
    "+`towards ${a==='toy'?'the toy corpus\\'s gold links':`the gold links of ${a}`} (weight ${cfg('guided_weight')})`;}\n"
    "function trained(){const box=document.getElementById('trained');if(!CONFIG.length){txt('p',{'class':'muted'},'config.txt has no options',box);return;}\n"
    // The model as its architecture's row describes it (MODEL, from the run's checkpoint): the page derives nothing.
    "const n=x=>Number(x).toLocaleString('en');\n"
    "const model=MODEL!==null?`the model: ${MODEL}`:'the model of the options below (no checkpoint yet to describe it)';\n"
    "const units=cfg('subword')?`${cfg('subword_kind')||'bpe'} subword pieces (at most ${cfg('subword')} ${cfg('subword_joint')==='1'?'shared':'a side'})`:'words';\n"
    "const data=cfg('corpus')==='toy'?'the toy corpus':cfg('corpus');\n"
    "const p=el('p',{},box);p.textContent=`${model}; on ${units}, ${cfg('dtype')||'float64'}, ${n(cfg('parameters')||0)} parameters; `\n"
    "+`${data}: ${n(cfg('train_pairs')||0)} train / ${n(cfg('dev_pairs')||0)} dev pairs${Number(cfg('max_len'))?`, at most ${cfg('max_len')} tokens a side`:''}; `\n"
    "+`${cfg('optimizer')} lr ${cfg('lr')}${Number(cfg('warmup_steps'))?` (warmup ${cfg('warmup_steps')} steps, then ${cfg('lr_schedule')||'plateau'})`:''}, batch ${cfg('batch')}, label smoothing ${cfg('label_smoothing')}, dropout ${cfg('dropout')}`\n"
    "+(cfg('preset')?`; --preset ${cfg('preset')}`:'')+guidedText()+'.';\n"
    // best.ckpt: the epoch evaluations only, by --best (BLEU, ties by loss; or loss).
    "const E=column(METRICS,'epoch'),B=column(METRICS,'dev_bleu'),D=column(METRICS,'dev_loss');let best=-1;\n"
    "E.forEach((e,i)=>{if(e===null||e!==Math.round(e))return;if(best<0)best=i;else if(cfg('best')==='loss'?D[i]<D[best]:(B[i]>B[best]||(B[i]===B[best]&&D[i]<D[best])))best=i;});\n"
    "if(best>=0)txt('p',{},cfg('best')==='loss'?`best.ckpt: epoch ${E[best]}, the lowest dev loss (${D[best].toFixed(4)}) of the epochs (--best loss).`\n"
    ":`best.ckpt: epoch ${E[best]}, the highest greedy dev BLEU (${B[best].toFixed(4)}) of the epochs (--best bleu; a tie goes to the lower dev loss).`,box);\n"
    "const det=el('details',{},box);txt('summary',{},'every option (config.txt)',det);const t=el('table',{'class':'config'},det);\n"
    "CONFIG.forEach(([k,v])=>{const tr=el('tr',{},t);txt('td',{},k,tr);txt('td',{},v,tr);});}\n"
    "trained();\n"
    // heads.csv: each evaluation's AER per cross-attention head. The last
    // evaluation's as a table (layers x heads and the mean), and over the
    // steps the guided head's, the best head's and the last layer's mean.
    "function headsAer(){const box=document.getElementById('heads_aer'),rows=HEADS.rows.filter(r=>r[4]!==null);\n"
    "if(!rows.length){box.previousElementSibling.style.display='none';return;}\n"
    "const steps=[...new Set(rows.map(r=>r[1]))].sort((a,b)=>a-b),last=steps[steps.length-1],now=rows.filter(r=>r[1]===last);\n"
    "const L=Math.max(...now.map(r=>r[2]))+1,H=Math.max(...now.map(r=>r[3]))+1,g=guidedHead();\n"
    "const at=(l,k,rs)=>{const r=rs.find(r=>r[2]===l&&r[3]===k);return r?r[4]:null;};\n"
    "let best=null;now.forEach(r=>{if(r[3]>=0&&(!best||r[4]<best[4]))best=r;});\n"
    "const isGuided=(l,k)=>g&&g.l===l&&g.k===k;\n"
    "txt('p',{},`The AER of each cross-attention head's argmax against the dev set's gold links, on the greedy outputs `\n"
    "+`(heads.csv; lower is better; the mean column is each layer's head mean, the last layer's what the search attends with), `\n"
    "+`at epoch ${now[0][0]}, step ${last}:`,box);\n"
    "const t=el('table',{'class':'aer'},box),head=el('tr',{},t);el('th',{},head);\n"
    "for(let k=0;k<=H;k++)txt('th',{},k<H?`head ${k}`:'mean',head);\n"
    "for(let l=0;l<L;l++){const tr=el('tr',{},t);txt('th',{},`layer ${l}`,tr);for(let k=0;k<=H;k++){const v=at(l,k<H?k:-1,now);\n"
    "const c=[k<H&&isGuided(l,k)?'guided':'',best&&best[2]===l&&best[3]===k?'best':''].join(' ').trim();\n"
    "txt('td',c?{'class':c}:{},v===null?'-':(k<H&&isGuided(l,k)?'*':'')+v.toFixed(4),tr);}}\n"
    "txt('p',{'class':'muted'},(g?`* the guided head, layer ${g.l} head ${g.k} (train --guided-alignment); `:'')\n"
    "+(best?`bold: the best-aligned head, layer ${best[2]} head ${best[3]}.`:''),box);\n"
    "const series=[],colours=['#d62728','#1f77b4','#2ca02c'],pick=[];\n"
    "if(g)pick.push([g.l,g.k,`layer ${g.l} head ${g.k} (guided)`]);\n"
    "if(best&&!isGuided(best[2],best[3]))pick.push([best[2],best[3],`layer ${best[2]} head ${best[3]} (best)`]);\n"
    "pick.push([L-1,-1,`layer ${L-1} mean`]);\n"
    "pick.forEach(([l,k,name],i)=>{const rs=rows.filter(r=>r[2]===l&&r[3]===k);\n"
    "series.push({name,color:colours[i],xs:rs.map(r=>r[1]),ys:rs.map(r=>r[4]),points:true});});\n"
    "const charts=el('div',{'class':'charts'},box);lineChart(charts,'AER of the heads at each evaluation',series,'step','AER (lower is better)');}\n"
    "headsAer();\n"
    "const tip=document.getElementById('tip');let cells=0;\n"
    // Which output words are wrong: those outside a longest common
    // subsequence with the reference (so one missing word does not mark
    // every word after it).
    "function wrongWords(out,ref){const n=out.length,m=ref.length,L=[];for(let i=0;i<=n;i++)L.push(new Array(m+1).fill(0));"
    "for(let i=n-1;i>=0;i--)for(let j=m-1;j>=0;j--)L[i][j]=out[i]===ref[j]?L[i+1][j+1]+1:Math.max(L[i+1][j],L[i][j+1]);"
    "const wrong=new Array(n).fill(true);for(let i=0,j=0;i<n&&j<m;){if(out[i]===ref[j]){wrong[i]=false;i++;j++;}"
    "else if(L[i+1][j]>=L[i][j+1])i++;else j++;}return wrong;}\n"
    "function words(parent,list,wrong){list.forEach((w,k)=>{if(k)parent.appendChild(document.createTextNode(' '));"
    "txt('span',wrong[k]?{'class':'wrong',title:'not in the reference here'}:{},w,parent);});}\n"
    // One heatmap; cell px wide (values written in cells of 30 px and more).
    "function heatmap(parent,label,sent,h,cell){const box=el('div',{},parent),source=sent.source;"
    "const wrong=wrongWords(h.output,sent.reference),line=el('div',{style:`max-width:${Math.max(320,source.length*cell+110)}px`},box);txt('b',{},`${label}: `,line);"
    "words(line,h.output,wrong);"
    "line.appendChild(document.createTextNode(h.ended?'':' (cut at the length limit)'));"
    "if(wrong.length===sent.reference.length&&!wrong.some(x=>x))txt('span',{'class':'muted'},' (exact)',line);"
    "if(!h.weights.length||!h.weights[0].length){txt('div',{'class':'muted'},'no weights to show: this model has no attention (--attn none)',box);return;}"
    "const t=el('table',{'class':'heat'},box),head=el('tr',{},t);el('th',{},head);"
    "source.forEach(w=>txt('th',{'class':'src'},w,head));"
    "h.weights.forEach((row,j)=>{const tr=el('tr',{},t);const tw=j<h.output.length?h.output[j]:(h.ended?'<eos>':'<cut>');"
    "txt('th',{style:'text-align:right','class':j<h.output.length&&wrong[j]?'wrong':''},tw,tr);row.forEach((w,i)=>{const [r,g,b]=colour(w);"
    "const td=txt('td',{style:`width:${cell}px;min-width:${cell}px;background:rgb(${r},${g},${b});color:${r*0.3+g*0.6+b*0.1>140?'#000':'#fff'}`},"
    "cell>=30&&w>=0.1?w.toFixed(2):'',tr);td.dataset.tip=`${source[i]} \\u2192 ${tw}: ${Number(w).toFixed(4)}`;cells++;});});}\n"
    // The colour scale of the cells: viridis over [0, 1].
    "function scale(parent){const d=el('div',{'class':'scale'},parent);txt('span',{},'weight 0',d);"
    "el('div',{'class':'bar',style:`background:linear-gradient(to right,${VIRIDIS.map(c=>`rgb(${c.join(',')})`).join(',')})`},d);"
    "txt('span',{},'1',d);txt('span',{'class':'muted'},'(0.5 in the middle; hover a cell for its weight)',d);}\n"
    "document.addEventListener('mousemove',e=>{const d=e.target&&e.target.dataset&&e.target.dataset.tip;"
    "if(d){tip.textContent=d;tip.style.display='block';tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';}"
    "else tip.style.display='none';});\n"
    // A Transformer's heads of the greedy output (sent.heads, attention.jsonl):
    // one matrix chosen by view, layer and head, or every layer x head as a grid.
    "const HEAD_VIEWS={cross:'cross-attention',enc:'encoder self-attention',dec:'decoder self-attention'};\n"
    "const headPick={view:'cross',layer:'all',head:'mean'};\n"
    // What a view's rows and columns are: the captions say it for each view.
    "const HEAD_AXES={cross:'rows: the output words (and <eos>); columns: the source words',"
    "enc:'rows and columns: the source words (each source word attending to every source word)',"
    "dec:'rows: the output words (and <eos>); columns: the decoder\\'s inputs, <sos> then the output words (causal: '"
    "+'a word sees only those before it)'};\n"
    "function headLabels(sent,v){const g=sent.greedy,out=g.output.concat([g.ended?'<eos>':'<cut>']);\n"
    "return [v==='enc'?sent.source:out,v==='dec'?['<sos>'].concat(g.output):sent.source];}\n"
    // One matrix m as a table of cells px wide; the row and column words where asked.
    "function matrixTable(parent,m,rows,cols,cell,showRows,showCols,what){const t=el('table',{'class':'heat'},parent);\n"
    "if(showCols){const head=el('tr',{},t);if(showRows)el('th',{},head);"
    "cols.forEach(w=>txt('th',{'class':'src',style:`width:${cell}px;max-width:${cell}px;padding:0;font-size:${cell<18?10:12}px`},w,head));}\n"
    "m.forEach((row,j)=>{const tr=el('tr',{},t);if(showRows)txt('th',{style:`text-align:right;height:${Math.min(22,cell)}px;`"
    "+`padding:0 4px;line-height:1;font-size:${cell<18?10:12}px`},rows[j],tr);\n"
    "row.forEach((w,i)=>{const [r,g,b]=colour(w);const td=txt('td',{style:`width:${cell}px;min-width:${cell}px;height:${Math.min(22,cell)}px;`\n"
    "+`background:rgb(${r},${g},${b});color:${r*0.3+g*0.6+b*0.1>140?'#000':'#fff'}`},cell>=30&&w>=0.1?w.toFixed(2):'',tr);\n"
    "td.dataset.tip=`${what}: ${cols[i]} \\u2192 ${rows[j]}: ${Number(w).toFixed(3)}`;cells++;});});return t;}\n"
    "function headSelect(parent,label,options,value,key){const l=txt('label',{},label+' ',parent),s=el('select',{},l);\n"
    "options.forEach(([v,name])=>{const o=txt('option',{value:v},name,s);if(String(v)===String(value))o.selected=true;});\n"
    "s.dataset.head=key;s.addEventListener('change',()=>{headPick[key]=s.value;draw();});}\n"
    // The section opens on the grid of every layer x head (the head mean alone is the heatmap above).
    "function drawHeads(parent,sent,index){const hs=sent.heads;\n"
    "if(!hs){const some=EPOCHS.some(E=>E.sentences.some(x=>x.heads));if(!some)return;\n"
    "const n=EPOCHS[EPOCHS.length-1].sentences.filter(x=>x.heads).length;\n"
    "const box=el('div',{'class':'heads'},parent);txt('h3',{},'Every head of the greedy output',box);\n"
    "txt('p',{'class':'muted'},`No per-head view for sentence ${index+1}: the trainer records every head for the first ${n} dev sentences only `\n"
    "+`(attention.jsonl stays small); pick one of sentences 1 to ${n} to see them.`,box);return;}\n"
    "const L=hs.layers,H=hs.heads;\n"
    "const box=el('div',{'class':'heads'},parent);txt('h3',{},'Every head of the greedy output',box);\n"
    "if(headPick.layer!=='all'&&Number(headPick.layer)>=L)headPick.layer=String(L-1);\n"
    "if(headPick.head!=='mean'&&Number(headPick.head)>=H)headPick.head='mean';\n"
    "const c=el('div',{'class':'controls'},box);\n"
    "headSelect(c,'attention',Object.entries(HEAD_VIEWS),headPick.view,'view');\n"
    "headSelect(c,'layer',[['all','all: every layer x head']].concat([...Array(L).keys()].map(l=>[l,`${l}${l===L-1?' (last)':''}`])),headPick.layer,'layer');\n"
    "if(headPick.layer!=='all')headSelect(c,'head',[...Array(H).keys()].map(k=>[k,String(k)]).concat([['mean',`mean of ${H}`]]),headPick.head,'head');\n"
    "const v=headPick.view,[rows,cols]=headLabels(sent,v),m=hs[v];\n"
    "if(headPick.layer!=='all'){const l=Number(headPick.layer),k=headPick.head==='mean'?H:Number(headPick.head);\n"
    "const what=`${HEAD_VIEWS[v]}, layer ${l}, ${k===H?`mean of ${H} heads`:`head ${k}`}`;\n"
    "txt('p',{'class':'muted'},what+(v==='cross'&&l===L-1&&k===H?' (what the search attends with, as in the heatmaps above)':'')+`; ${HEAD_AXES[v]}`,box);\n"
    "matrixTable(box,m[l][k],rows,cols,Math.max(14,Math.min(30,Math.floor(600/Math.max(1,cols.length)))),true,true,what);return;}\n"
    "txt('p',{'class':'muted'},`${HEAD_VIEWS[v]}: one row per layer, one column per head and their mean; ${HEAD_AXES[v]}; hover a cell for its words and weight`,box);\n"
    "const cell=Math.max(12,Math.min(16,Math.floor(220/Math.max(1,cols.length,rows.length))));\n"
    "const g=el('table',{'class':'grid'},box),top=el('tr',{},g);el('th',{},top);\n"
    "for(let k=0;k<=H;k++)txt('th',{},k<H?`head ${k}`:'mean',top);\n"
    "m.forEach((layer,l)=>{const tr=el('tr',{},g);txt('th',{},`layer ${l}`,tr);\n"
    "layer.forEach((mat,k)=>{const td=el('td',{},tr);matrixTable(td,mat,rows,cols,cell,k===0,l===0,`layer ${l} ${k<H?`head ${k}`:'mean'}`);});});}\n"
    // A subword run's pieces ("\u2581" starts a word) merged into words as attend --words merges them:
    // a word's columns summed, its rows averaged; <eos>, <cut>, <sos> stay rows and columns of their own.
    "const MARK='\\u2581';function isPieces(sent){return sent.source.some(w=>w.startsWith(MARK));}\n"
    "function groups(labels){const g=[],words=[];labels.forEach(w=>{const own=/^<(eos|cut|sos)>$/.test(w);\n"
    "if(own||!words.length||w.startsWith(MARK)||/^<(eos|cut|sos)>$/.test(words[words.length-1]))words.push(own?w:w.split(MARK).join(''));\n"
    "else words[words.length-1]+=w.split(MARK).join('');g.push(words.length-1);});return {g,words};}\n"
    "function mergeMatrix(m,rg,nr,cg,nc){const out=[...Array(nr)].map(()=>new Array(nc).fill(0)),cnt=new Array(nr).fill(0);\n"
    "m.forEach((row,j)=>{cnt[rg[j]]++;row.forEach((w,i)=>{out[rg[j]][cg[i]]+=w;});});return out.map((row,r)=>row.map(w=>w/Math.max(1,cnt[r])));}\n"
    "function mergeHyp(h,cg){const rows=groups(h.output.concat([h.ended?'<eos>':'<cut>']));\n"
    "return {rows,h:{output:rows.words.slice(0,-1),ended:h.ended,weights:h.weights.length?mergeMatrix(h.weights,rows.g,rows.words.length,cg.g,cg.words.length):[]}};}\n"
    "function inWords(sent){const cg=groups(sent.source),g=mergeHyp(sent.greedy,cg),b=mergeHyp(sent.beam,cg);\n"
    "const out={source:cg.words,reference:groups(sent.reference).words,greedy:g.h,beam:b.h};if(!sent.heads)return out;\n"
    "const hs=sent.heads,dec=groups(['<sos>'].concat(sent.greedy.output)),R=g.rows,sw=cg.words.length;\n"
    "const each=(v,rg,nr,cg,nc)=>hs[v].map(layer=>layer.map(m=>mergeMatrix(m,rg,nr,cg,nc)));\n"
    "out.heads={layers:hs.layers,heads:hs.heads,cross:each('cross',R.g,R.words.length,cg.g,sw),enc:each('enc',cg.g,sw,cg.g,sw),\n"
    "dec:each('dec',R.g,R.words.length,dec.g,dec.words.length)};return out;}\n"
    "const pick=document.getElementById('sentence'),slider=document.getElementById('epoch'),"
    "shown=document.getElementById('epoch_label'),view=document.getElementById('view'),"
    "buckets=document.getElementById('buckets'),wordsOn=document.getElementById('words'),wordsBox=document.getElementById('words_box');\n"
    "function when(E){return `epoch ${E.epoch}`+(E.step!==undefined?`, step ${E.step}`:'');}\n"
    "function drawBuckets(e){buckets.textContent='';const names=['1-5','6-10','11-15','16+'];"
    "const b=EPOCHS[e].bleu_by_length;const W=420,H=200,L=40,B=30;"
    "const svg=el('svg',{width:W,height:H},buckets,true);"
    "txt('text',{x:L,y:16,'font-size':13},`dev BLEU by source length, ${when(EPOCHS[e])}`,svg,true);"
    "const top=roundAxis(0,Math.max(0.01,...b.map(x=>x[0])),4).hi;"
    "b.forEach(([bleu,pairs],k)=>{const x=L+k*90,h=(H-B-44)*Math.max(0,Math.min(1,bleu/top));"
    "if(!pairs){txt('text',{x:x+30,y:H-B-6,'text-anchor':'middle','font-size':11,'class':'muted'},'no pairs',svg,true);"
    "txt('text',{x:x+30,y:H-B+14,'text-anchor':'middle','font-size':11},`${names[k]} (0)`,svg,true);return;}"
    "const r=el('rect',{x:x,y:H-B-h,width:60,height:h,fill:'#1f77b4'},svg,true);"
    "txt('title',{},`${names[k]} words: BLEU ${bleu.toFixed(4)} on ${pairs} pairs`,r,true);"
    "txt('text',{x:x+30,y:H-B+14,'text-anchor':'middle','font-size':11},`${names[k]} (${pairs})`,svg,true);"
    "txt('text',{x:x+30,y:H-B-h-4,'text-anchor':'middle','font-size':11},bleu.toFixed(3),svg,true);});}\n"
    "function draw(){const e=Number(slider.value),s=Number(pick.value);view.textContent='';"
    "if(!EPOCHS.length){txt('p',{'class':'muted'},'attention.jsonl has no epochs yet',view);return;}"
    "shown.textContent=when(EPOCHS[e]);drawBuckets(e);let sent=EPOCHS[e].sentences[s];if(!sent)return;"
    "wordsBox.style.display=isPieces(sent)?'':'none';if(isPieces(sent)&&wordsOn.checked)sent=inWords(sent);"
    "txt('p',{},`source: ${sent.source.join(' ')}`,view);txt('p',{},`reference: ${sent.reference.join(' ')}`,view);"
    "txt('p',{'class':'muted'},'Output words in red are not in the reference (in its order).',view);"
    "if(sent.greedy.weights.length)scale(view);"
    // Greedy and beam side by side: cells as wide as the window allows both.
    "const room=document.documentElement.clientWidth-48-24-2*110,S=Math.max(1,sent.source.length);"
    "const cell=Math.max(14,Math.min(34,Math.floor(room/2/S)));"
    "const pair=el('div',{'class':'pair'},view);heatmap(pair,'greedy',sent,sent.greedy,cell);"
    "heatmap(pair,`beam ${EPOCHS[e].beam||4}`,sent,sent.beam,cell);drawHeads(view,sent,s);document.body.dataset.rendered=String(cells);"
    "const tops=[...pair.children].map(c=>c.getBoundingClientRect().top);"
    "document.body.dataset.sideBySide=String(tops.every(y=>y===tops[0]));}\n"
    "if(EPOCHS.length){slider.max=String(EPOCHS.length-1);slider.value=slider.max;"
    "EPOCHS[EPOCHS.length-1].sentences.forEach((s,i)=>{const w=isPieces(s)?groups(s.source).words:s.source;"
    "txt('option',{value:i},`${i+1}: ${w.slice(0,10).join(' ')}${w.length>10?' ...':''}`,pick);});}\n"
    "pick.addEventListener('change',draw);slider.addEventListener('input',draw);wordsOn.addEventListener('change',draw);draw();\n"
    "document.body.dataset.rendered=String(cells);\n"
    // How much the page scales the attention beside the attributions (1: their own size, never larger).
    "document.body.dataset.besideScale=String(Math.max(0,...[...document.querySelectorAll('.beside svg')]"
    ".map(s=>s.getBoundingClientRect().width/Number(s.getAttribute('width'))).map(x=>Math.round(x*100)/100)));\n"
    "</script>\n</body></html>\n";

static int write_page(FILE *f, const ts_report_input *in) {
    fputs(page_head, f);
    fputs("<h1>tinyseq run: ", f);
    for (const char *p = in->title; *p; p++) {
        if (*p == '<') fputs("&lt;", f);
        else if (*p == '&') fputs("&amp;", f);
        else fputc(*p, f);
    }
    fputs("</h1>\n<h2>What was trained</h2>\n<div id=\"trained\"></div>\n"
          "<h2>Training</h2>\n<div class=\"charts\" id=\"charts\"></div>\n"
          "<h2>Attention heads</h2>\n<div id=\"heads_aer\"></div>\n"
          "<h2>Attention explorer</h2>\n<div class=\"controls\"><label>sentence <select id=\"sentence\"></select></label>"
          "<label>evaluation <input type=\"range\" id=\"epoch\" min=\"0\" max=\"0\" value=\"0\"></label>"
          "<span id=\"epoch_label\"></span><label id=\"words_box\" style=\"display:none\"><input type=\"checkbox\" "
          "id=\"words\" checked> words (subword pieces merged, as attend --words)</label></div>\n<div id=\"buckets\"></div>\n<div id=\"view\"></div>\n"
          "<div id=\"tip\"></div>\n<p class=\"muted\">Rows: the output words (and &lt;eos&gt;); columns: the source"
          " words; each row sums to 1. Hover a cell for its words and weight.</p>\n<script>\nconst METRICS=", f);
    int rc = write_csv(f, in->metrics_csv, in->metrics_len, in->metrics_name);
    if (rc) return rc;
    fputs(";\nconst CONFIG=", f);
    if (in->config_txt && memchr(in->config_txt, '\0', in->config_len))
        return ts_fail(TS_ERR_FORMAT, "%s: a NUL byte", in->config_name);
    if ((rc = write_config(f, in->config_txt, in->config_name))) return rc;
    fputs(";\nconst MODEL=", f);
    if (in->model) ts_render_json_string(f, in->model);
    else fputs("null", f);
    if (in->model) fprintf(f, ";\nconst MODEL_HEADS=[%d,%d]", in->model_layers, in->model_heads);
    else fputs(";\nconst MODEL_HEADS=null", f);
    fputs(";\nconst STEPS=", f);
    if ((rc = write_csv(f, in->steps_csv, in->steps_len, in->steps_name))) return rc;
    fputs(";\nconst HEADS=", f);
    if ((rc = write_heads(f, in->heads_csv, in->heads_len, in->heads_name))) return rc;
    fputs(";\nconst EPOCHS=[\n", f);
    // One object a line, a last line without its newline included.
    const char *text = in->epochs_jsonl ? in->epochs_jsonl : "", *end = text + in->epochs_len;
    size_t line = 1;
    for (const char *p = text; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
        if (line > 1) fputs(",\n", f);
        if ((rc = ts_json_copy_object(f, p, n)))
            return ts_fail(rc, "%s:%zu: %s", in->epochs_name, line,
                           memchr(p, '\0', n) ? "a NUL byte" : ts_last_error());
        p += n + (eol != NULL);
    }
    fputs("\n];\n</script>\n", f);
    if (in->n_beside) {
        fputs("<h2>Attention beside attributions</h2>\n<div class=\"beside\">\n", f);
        for (size_t k = 0; k < in->n_beside; k++) {
            const ts_report_matrix *m = &in->beside[k];
            static const char *const axes[2] = {"target", "source"};
            fputs("<div>", f);
            if ((rc = ts_render_heatmap_svg(f, m->weights, m->T, m->S, m->target, m->source, axes, m->title))) return rc;
            fputs("</div>\n", f);
        }
        fputs("</div>\n", f);
        if (in->beside_note) {
            fputs("<p class=\"muted\">", f);
            for (const char *p = in->beside_note; *p; p++) {
                if (*p == '<') fputs("&lt;", f);
                else if (*p == '&') fputs("&amp;", f);
                else fputc(*p, f);
            }
            fputs("</p>\n", f);
        }
    }
    fputs(page_script, f);
    return TS_OK;
}

static int fill_page(void *ctx, FILE *out) { return write_page(out, ctx); }

// The page into memory first: a bad line found late leaves out untouched.
int ts_report_write_html_to(FILE *out, const ts_report_input *in) {
    char *page = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&page, &len);
    if (!f) return ts_fail(TS_ERR_NOMEM, "out of memory for the report");
    int rc = write_page(f, in);
    if (fclose(f) != 0 && !rc) rc = ts_fail(TS_ERR_NOMEM, "out of memory for the report");
    if (!rc && fwrite(page, 1, len, out) != len) rc = ts_fail(TS_ERR_IO, "cannot write the report: %s", strerror(errno));
    free(page);
    return rc;
}

int ts_report_write_html(const char *path, const ts_report_input *in) {
    return ts_write_atomic(path, fill_page, (void *)in, NULL);
}
