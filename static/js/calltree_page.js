// The entry of a page with a call tree (a snapshot's, a build's): the tree, then its flame graph
// and Top Functions views. A module script runs once the page is parsed.
import {startCallTree} from "./calltree.js";
import {startViews} from "./calltree_views.js";

const widget = document.getElementById("calltree");
if (widget) startViews(startCallTree(widget));
