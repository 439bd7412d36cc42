// The entry of a page with diff trees (build compare, the diffs): each tree, then its flame view.
// A module script runs once the page is parsed.
import {startDiffFlames} from "./diffflame.js";
import {startDiffTrees} from "./difftree.js";

startDiffTrees();
startDiffFlames();
